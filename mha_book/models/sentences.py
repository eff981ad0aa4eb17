"""Plain English sentences for probing a sentence encoder, and close paraphrases.

Used in chapter 11-pretrained-bert: the heads of all-MiniLM-L6-v2 are ranked
by their effect on the embeddings of one part of :data:`SENTENCES` and tested
on the other part, over many random splits; :data:`PARAPHRASES` gives the
similarity that a change of wording with the same meaning scores, a yardstick
for "how far did the embedding move". The sentences are everyday statements on
unrelated topics, one clause or two, written for this book.
"""

from __future__ import annotations

__all__ = ["SENTENCES", "PARAPHRASES"]

#: 32 sentences on everyday topics, one topic each.
SENTENCES: tuple[str, ...] = (
    "She poured water from the jug into the glass until it was full.",
    "Attention lets every word look at every other word in the sentence.",
    "When the rain stopped, the children ran outside to play.",
    "A quiet river runs past the old mill at the edge of town.",
    "He forgot his umbrella, so he got wet on the way home.",
    "Prices rose sharply after the storm damaged the harbour.",
    "The committee will publish its report next spring.",
    "My neighbour grows tomatoes and beans in her back garden.",
    "The train to the airport leaves every twenty minutes.",
    "Scientists found traces of water in the rocks of the crater.",
    "The bakery on the corner sells fresh bread every morning.",
    "Our team lost the final match by a single goal.",
    "Please turn off the lights when you leave the room.",
    "The museum opened a new exhibition of early photographs.",
    "He practises the piano for an hour before dinner.",
    "The bridge was closed for repairs during the whole summer.",
    "A small dog barked at the postman from behind the fence.",
    "The company hired forty new engineers this year.",
    "She wrote a long letter to her grandmother in Spain.",
    "Heavy snow blocked the mountain road for three days.",
    "The doctor advised him to sleep more and drink less coffee.",
    "Most of the students passed the exam on their first try.",
    "The old castle on the hill attracts thousands of visitors.",
    "They painted the kitchen a pale shade of yellow.",
    "The library stays open late on Thursdays.",
    "A strong wind knocked over the chairs on the terrace.",
    "The recipe calls for two eggs and a cup of flour.",
    "The new phone has a larger screen and a better camera.",
    "Our flight was delayed because of fog at the airport.",
    "The cat slept in a patch of sunlight on the carpet.",
    "The city plans to plant a thousand trees along its streets.",
    "She learned to swim when she was six years old.",
)

#: Pairs of sentences that say the same thing in other words.
PARAPHRASES: tuple[tuple[str, str], ...] = (
    (
        "The committee will publish its report next spring.",
        "Next spring the committee is going to release its report.",
    ),
    (
        "He forgot his umbrella, so he got wet on the way home.",
        "Having left his umbrella behind, he got soaked walking home.",
    ),
    (
        "The library stays open late on Thursdays.",
        "On Thursdays the library closes later than usual.",
    ),
    (
        "Our flight was delayed because of fog at the airport.",
        "Fog at the airport made our flight late.",
    ),
    (
        "The bakery on the corner sells fresh bread every morning.",
        "Every morning the corner bakery has freshly baked bread for sale.",
    ),
    (
        "She learned to swim when she was six years old.",
        "At the age of six she learned how to swim.",
    ),
    (
        "The company hired forty new engineers this year.",
        "This year the firm took on forty more engineers.",
    ),
    (
        "Heavy snow blocked the mountain road for three days.",
        "For three days the road over the mountain was closed by deep snow.",
    ),
)
