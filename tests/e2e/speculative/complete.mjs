// Greedy completions from llama-server's native /completion endpoint (node's built-in fetch, no
// dependencies), one request at a time, for tests/e2e/speculative.sh.
//
// usage: node complete.mjs <server url> <prompts.json> <n_predict> <out.json>
// Writes [{prompt, content, tokens, timings}] where timings is the server's own (predicted_n,
// predicted_per_second, draft_n, draft_n_accepted, ...). Exits 1 on any failed request.
import { readFileSync, writeFileSync } from 'node:fs';

const [url, promptsFile, nPredict, outFile] = process.argv.slice(2);
const prompts = JSON.parse(readFileSync(promptsFile, 'utf8'));
const results = [];
for (const prompt of prompts) {
    const body = {
        prompt,
        n_predict: Number(nPredict),
        // Greedy: speculative decoding must then give exactly the text the target alone gives.
        temperature: 0,
        top_k: 1,
        seed: 1,
        cache_prompt: false,
        return_tokens: true,
    };
    const r = await fetch(`${url}/completion`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
    });
    if (r.status !== 200) {
        console.error(`HTTP ${r.status} for prompt ${JSON.stringify(prompt)}: ${await r.text()}`);
        process.exit(1);
    }
    const j = await r.json();
    results.push({ prompt, content: j.content, tokens: j.tokens, timings: j.timings });
}
writeFileSync(outFile, JSON.stringify(results, null, 1));
