// Cut stylesheets to the rules an edition's pages can use, with PurgeCSS.
// Usage: node purge_css.cjs <job.json>, where the job is
//   {"content": [globs of pages and scripts], "css": [{"source": ..., "dest": ...}]}
// A selector is kept when every class, id and tag it names occurs in a page
// or in one of the edition's scripts: the scripts name the classes they add at
// run time (Bootstrap's "show", the theme's dark mode), so those rules stay.
// Each purged stylesheet is written to its dest; one JSON line per file.
const fs = require("fs");
const { PurgeCSS } = require("purgecss");

async function main() {
  const job = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
  const dest = new Map(job.css.map(({ source, dest }) => [source, dest]));
  const results = await new PurgeCSS().purge({
    content: job.content,
    css: job.css.map(({ source }) => source),
    safelist: {
      // A rule of pseudo-classes alone (the theme's ":focus-visible" focus ring)
      // names nothing to look for in the pages; PurgeCSS would drop it.
      standard: [/^::?[a-z-]+$/],
      // Composed at run time from pieces no page or script spells out whole.
      greedy: [/^bd-/, /^pst-/, /^search-button/, /^theme-switch/],
    },
    keyframes: true,
  });
  for (const r of results) {
    fs.writeFileSync(dest.get(r.file), r.css);
    const line = { dest: dest.get(r.file), before: fs.statSync(r.file).size, after: Buffer.byteLength(r.css) };
    process.stdout.write(JSON.stringify(line) + "\n");
  }
}

main().catch((e) => {
  console.error(e.stack || String(e));
  process.exit(1);
});
