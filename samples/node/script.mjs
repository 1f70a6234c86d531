// A node-llama-cpp workload for ggprof's tests: its prebuilt libraries, a binary we did not build.
// usage: node script.mjs MODEL.gguf [TOKENS] [vulkan]   (run from a folder where node-llama-cpp is installed)
// LLAMA_LOG_LEVEL=info prints llama.cpp's log (its buffer sizes among it); the default, warn, only its warnings.
import {getLlama, LlamaCompletion} from "node-llama-cpp";

const [modelPath, tokens = "8", gpu] = process.argv.slice(2);
if (!modelPath || (gpu && gpu !== "vulkan")) {
    console.error("usage: node script.mjs MODEL.gguf [TOKENS] [vulkan]");
    process.exit(2);
}
// build: "never" keeps node-llama-cpp on its prebuilt binaries: nothing is compiled or downloaded.
const llama = await getLlama({gpu: gpu ?? false, build: "never", logLevel: process.env.LLAMA_LOG_LEVEL || "warn"});
const model = await llama.loadModel({modelPath, gpuLayers: gpu ? 99 : 0});
const context = await model.createContext({contextSize: 256, threads: 2});
const completion = new LlamaCompletion({contextSequence: context.getSequence()});
const text = await completion.generateCompletion("Hello world", {maxTokens: Number(tokens)});
console.log(`generated ${text.length} characters on ${llama.gpu || "cpu"}`);
await context.dispose();
await model.dispose();
await llama.dispose();
