// Three pages (the dashboard, the widget demo and the OAuth consent page) and
// the widget's own module under a fixed name, so any page can load it with
// one <script type="module">.
// Everything else gets a content hash in its name and is cached for good.

import { resolve } from "node:path";
import { defineConfig } from "vite";

const widgetEntry = "mandate-verify";

export default defineConfig({
  // Relative asset URLs: the widget module finds its chunks and the .wasm
  // beside itself, whichever page loads it.
  base: "./",
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "es2022",
    assetsInlineLimit: 0,
    rolldownOptions: {
      input: {
        index: resolve(import.meta.dirname, "index.html"),
        widget: resolve(import.meta.dirname, "widget.html"),
        consent: resolve(import.meta.dirname, "consent.html"),
        [widgetEntry]: resolve(import.meta.dirname, "src/widget/element.ts"),
      },
      output: {
        entryFileNames: (chunk) =>
          chunk.name === widgetEntry ? `${widgetEntry}.js` : "assets/[name]-[hash].js",
      },
    },
  },
});
