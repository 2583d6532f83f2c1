// Drives `momentkv serve` with the official `openai` npm client (v4, pinned in package.json):
// a completion, a streamed completion, a chat completion, a streamed chat completion and a
// completion with a per-request press. Prints the results as one JSON object; exits non-zero on
// any client error.
// Usage: node openai_client.cjs BASE_URL API_KEY   (MOMENTKV_NPM_DIR: the folder holding node_modules)
const path = require("path");
const { createRequire } = require("module");
const npmDir = process.env.MOMENTKV_NPM_DIR;
if (!npmDir) throw new Error("MOMENTKV_NPM_DIR is not set");
const OpenAI = createRequire(path.join(npmDir, "package.json"))("openai");

async function main() {
  const [baseURL, apiKey] = process.argv.slice(2);
  const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 120000 });
  const out = {};
  const completion = await client.completions.create({
    model: "stories-needle-2k", prompt: "Once upon a time", max_tokens: 12, temperature: 0,
  });
  out.completion = completion.choices[0].text;
  out.completion_finish = completion.choices[0].finish_reason;
  out.completion_tokens = completion.usage.completion_tokens;

  let streamed = "";
  const stream = await client.completions.create({
    model: "stories-needle-2k", prompt: "Once upon a time", max_tokens: 12, temperature: 0, stream: true,
  });
  for await (const chunk of stream) streamed += chunk.choices[0]?.text ?? "";
  out.completion_streamed = streamed;

  const chat = await client.chat.completions.create({
    model: "stories-needle-2k", messages: [{ role: "user", content: "Tell me a story." }], max_tokens: 8, temperature: 0,
  });
  out.chat = chat.choices[0].message.content;
  out.chat_role = chat.choices[0].message.role;

  let chatStreamed = "";
  const chatStream = await client.chat.completions.create({
    model: "stories-needle-2k", messages: [{ role: "user", content: "Tell me a story." }], max_tokens: 8, temperature: 0,
    stream: true,
  });
  for await (const chunk of chatStream) chatStreamed += chunk.choices[0]?.delta?.content ?? "";
  out.chat_streamed = chatStreamed;

  // The compression extensions travel as extra body fields.
  const pressed = await client.completions.create({
    model: "stories-needle-2k", prompt: "Once upon a time, there was a little girl named Lily. She loved to play",
    max_tokens: 6, temperature: 0, kv_press: "snapkv", kv_budget: 8,
  });
  out.pressed_usage = pressed.usage;

  try {
    await client.completions.create({ model: "m", prompt: "x", kv_press: "nosuchpress", kv_budget: 8 });
    out.bad_press_status = 200;
  } catch (e) {
    out.bad_press_status = e.status;
    out.bad_press_param = e.param ?? e.error?.param ?? null;
  }
  console.log(JSON.stringify(out));
}

main().catch((e) => {
  console.error(`openai client error: ${e.stack || e}`);
  process.exit(1);
});
