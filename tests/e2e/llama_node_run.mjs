// A @fugood/llama.node workload for ggprof's tests: ggml linked into its prebuilt node addon (no libggml*.so).
// usage: node llama_node_run.mjs LLAMA_NODE_DIR MODEL.gguf [TOKENS] [THREADS]
// LLAMA_NODE_DIR is the npm project the fixture installs it into (LLAMA_NODE_DIR=); prints "tokens: N".
import {createRequire} from "node:module";
import path from "node:path";

const [dir, model, tokens = "16", threads = "2"] = process.argv.slice(2);
if (!dir || !model || !(Number(tokens) > 0) || !(Number(threads) > 0)) {
    console.error("usage: node llama_node_run.mjs LLAMA_NODE_DIR MODEL.gguf [TOKENS] [THREADS]");
    process.exit(2);
}
// the package is CommonJS: require it from the project, which also finds its platform addon there
const require = createRequire(path.join(path.resolve(dir), "package.json"));
const {loadModel} = require("@fugood/llama.node");

const context = await loadModel({model, n_ctx: 256, n_gpu_layers: 0, n_threads: Number(threads)});
// greedy, fixed seed, EOS ignored: a random-weight model generates exactly TOKENS tokens. They are counted by the
// per-token callback: on a fresh context the result's tokens_predicted leaves out the first one (1.7.15).
let generated = 0;
const result = await context.completion({
    prompt: "Hello world",
    n_predict: Number(tokens),
    temperature: 0,
    seed: 42,
    ignore_eos: true,
}, () => generated++);
console.log(`prompt tokens: ${result.timings.prompt_n} (tokens_predicted ${result.tokens_predicted})`);
console.log(`tokens: ${generated}`);
await context.release();
