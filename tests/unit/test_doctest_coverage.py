"""Every public function and class of mha_book has a doctest, except those
listed here with the reason (the API page's introduction says the same)."""

import importlib
import inspect

from tools.check_api import public_modules

TRAINS = "trains a model"
MEASURES = "measures what a trained model learned"
TIMES = "times code or measures memory (the benchmark)"
READS = "reads stored files: a checkpoint, the MiniLM weights, stored results"
SHOWN = "a record, cache or error that the example of the function making it shows"
OTHER = "changes how the notebook kernel shows errors, or draws a widget"

WITHOUT_DOCTEST = {
    "mha_book.lm.recipes.shakespeare_decoder": TRAINS,
    "mha_book.lm.recipes.tang_poem_decoder": TRAINS,
    "mha_book.seq2seq.recipes.date_translator": TRAINS,
    "mha_book.lm.training.train": TRAINS,
    "mha_book.seq2seq.training.train_translator": TRAINS,
    "mha_book.seq2seq.training.train_translators": TRAINS,
    "mha_book.seq2seq.measures.cross_attention": MEASURES,
    "mha_book.seq2seq.measures.alignment_shares": MEASURES,
    "mha_book.seq2seq.measures.silenced": MEASURES,
    "mha_book.bench.cli.main": TIMES,
    "mha_book.bench.compare.run": TIMES,
    "mha_book.bench.compare.kernel_times": TIMES,
    "mha_book.bench.decode.decode_speed": TIMES,
    "mha_book.bench.flex.flex_speed": TIMES,
    "mha_book.bench.flex.format_flex": TIMES,
    "mha_book.bench.memory.measure_peak_memory": TIMES,
    "mha_book.bench.tables.format_table": TIMES,
    "mha_book.bench.tables.format_kernels": TIMES,
    "mha_book.bench.tables.format_decode": TIMES,
    "mha_book.bench.timing.matmul_gflops": TIMES,
    "mha_book.lm.artifacts.cached": READS,
    "mha_book.lm.checkpoint.load_checkpoint": READS,
    "mha_book.models.pretrained.minilm_dir": READS,
    "mha_book.models.pretrained.load_tokenizer": READS,
    "mha_book.models.pretrained.sentence_embedding": READS,
    "mha_book.attention.kernels.AttentionKernel": SHOWN,
    "mha_book.attention.latent.LatentCache": SHOWN,
    "mha_book.book_map.Chapter": SHOWN,
    "mha_book.book_map.Part": SHOWN,
    "mha_book.lm.artifacts.ArtifactBusy": SHOWN,
    "mha_book.lm.extrapolation.ExtrapolationRun": SHOWN,
    "mha_book.lm.history.TrainHistory": SHOWN,
    "mha_book.lm.recipes.TrainedModel": SHOWN,
    "mha_book.models.bert.BertConfig": SHOWN,
    "mha_book.seq2seq.dates.DateExample": SHOWN,
    "mha_book.seq2seq.training.TrainedTranslator": SHOWN,
    "mha_book.seq2seq.translator.TranslatorConfig": SHOWN,
    "mha_book.seq2seq.translator.project_memory": SHOWN,
    "mha_book.serving.simulation.ServingRun": SHOWN,
    "mha_book.book.short_tracebacks": OTHER,
    "mha_book.viz.explorer.AttentionExplorer": OTHER,
}


def public_objects():
    for name in public_modules():
        module = importlib.import_module(name)
        names = getattr(module, "__all__", None) or [
            n for n in vars(module) if not n.startswith("_")
        ]
        for attr in names:
            obj = getattr(module, attr)
            if (inspect.isfunction(obj) or inspect.isclass(obj)) and (
                obj.__module__ == name
            ):
                yield f"{name}.{attr}", obj


def test_every_public_function_and_class_has_a_doctest_or_a_reason():
    objects = dict(public_objects())
    assert len(objects) > 150
    missing = [
        name
        for name, obj in objects.items()
        if ">>>" not in (inspect.getdoc(obj) or "") and name not in WITHOUT_DOCTEST
    ]
    assert missing == [], "add a doctest (Shape: and an example) to each"
    assert sorted(set(WITHOUT_DOCTEST) - set(objects)) == []  # no stale entries
