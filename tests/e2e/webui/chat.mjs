// Drive llama-server's web UI in a real browser, as a user does: open the page, type a prompt into the chat
// box, send it with Enter, wait until the answer has streamed in, then save a screenshot and the answer.
// Browser: Debian's Chromium, headless, through puppeteer-core (no browser download).
//
// usage: node chat.mjs <chromium> <page url> <prompt> <answer.txt> <screenshot.png>
import { writeFileSync } from 'node:fs';
import puppeteer from 'puppeteer-core';

const [chromium, url, prompt, answerFile, screenshot] = process.argv.slice(2);
const log = (s) => console.log(`[browser] ${s}`);

const browser = await puppeteer.launch({
    executablePath: chromium,
    headless: true,
    // --no-sandbox: CI runs as root, where Chromium's sandbox cannot start.
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--window-size=1280,900'],
    defaultViewport: { width: 1280, height: 900 },
});
let status = 1;
try {
    const page = await browser.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });

    const response = await page.goto(url, { waitUntil: 'load', timeout: 120000 });
    if (!response || response.status() !== 200) {
        throw new Error(`GET ${url}: HTTP ${response ? response.status() : 'no response'}`);
    }
    log(`opened ${url}`);

    // The chat box: a textarea ("Type a message..."), or the rich contenteditable one the UI's settings offer
    // (tools/ui ChatFormInput).
    const input = await page.waitForSelector('textarea[placeholder="Type a message..."], .chat-form-input-rich[contenteditable]',
                                             { timeout: 120000 });
    await input.click();
    await page.keyboard.type(prompt);
    await page.keyboard.press('Enter');
    log(`page "${await page.title()}": sent ${JSON.stringify(prompt)}`);

    // The answer: the assistant message's rendered markdown. Done when it has text, the Stop button is
    // gone (the UI shows it while streaming) and the text has not changed for two seconds.
    await page.waitForSelector('.chat-message-assistant', { timeout: 120000 });
    const deadline = Date.now() + 600000;
    let last = '', stableSince = Date.now();
    for (;;) {
        const state = await page.evaluate(() => {
            const msgs = document.querySelectorAll('.chat-message-assistant .markdown-content');
            const text = msgs.length ? msgs[msgs.length - 1].innerText.trim() : '';
            const streaming = [...document.querySelectorAll('button .sr-only')].some((s) => s.textContent.trim() === 'Stop');
            return { text, streaming };
        });
        if (state.text !== last) {
            last = state.text;
            stableSince = Date.now();
        }
        if (state.text && !state.streaming && Date.now() - stableSince > 2000) {
            break;
        }
        if (Date.now() > deadline) {
            throw new Error(`no complete answer after 600 s (so far: ${JSON.stringify(state.text)})`);
        }
        await new Promise((r) => setTimeout(r, 250));
    }
    log(`answer: ${JSON.stringify(last)}`);
    writeFileSync(answerFile, last + '\n');
    await page.screenshot({ path: screenshot, fullPage: false });
    log(`screenshot: ${screenshot}`);
    if (errors.length) {
        log(`page errors (reported, not failing): ${errors.slice(0, 5).join(' | ')}`);
    }
    status = 0;
} catch (e) {
    console.log(`FAIL: ${e.message}`);
} finally {
    await browser.close();
}
process.exit(status);
