// Drives the page at "/" of `momentkv serve` in Debian's chromium through puppeteer-core (pinned in
// package.json): picks a press and budget, types a message, sends it, waits for the streamed reply
// and reads the DOM. Prints {user, reply, stats} as JSON; saves a screenshot.
// Usage: node page_check.cjs URL PRESS BUDGET MAX_TOKENS MESSAGE SCREENSHOT
//        (MOMENTKV_NPM_DIR: the folder holding node_modules; CHROMIUM: the browser, default chromium)
const path = require("path");
const { createRequire } = require("module");
const npmDir = process.env.MOMENTKV_NPM_DIR;
if (!npmDir) throw new Error("MOMENTKV_NPM_DIR is not set");
const puppeteer = createRequire(path.join(npmDir, "package.json"))("puppeteer-core");

async function main() {
  const [url, press, budget, maxTokens, message, screenshot] = process.argv.slice(2);
  const browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--window-size=1000,700"],
  });
  try {
    const page = await browser.newPage();
    await page.setViewport({ width: 1000, height: 700 });
    await page.goto(url, { waitUntil: "networkidle0", timeout: 60000 });
    await page.select("#press", press);
    for (const [id, value] of [["#budget", budget], ["#max_tokens", maxTokens], ["#temperature", "0"]]) {
      await page.$eval(id, (el, v) => { el.value = v; }, value);
    }
    await page.type("#input", message);
    await page.click("#send");
    await page.waitForSelector(".msg.assistant[data-done='1'], .msg.error[data-done='1']", { timeout: 60000 });
    const result = await page.evaluate(() => ({
      user: document.querySelector(".msg.user").textContent,
      reply: document.querySelector(".msg.assistant, .msg.error").textContent,
      replyClass: document.querySelector(".msg.assistant, .msg.error").className,
      stats: document.getElementById("stats").textContent,
      model: document.getElementById("model").textContent,
    }));
    await page.screenshot({ path: screenshot });
    console.log(JSON.stringify(result));
  } finally {
    await browser.close();
  }
}

main().catch((e) => {
  console.error(`page check error: ${e.stack || e}`);
  process.exit(1);
});
