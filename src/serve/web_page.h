// The page served at "/": a chat box with press and budget pickers and live figures (tokens/s, KV
// bytes held against the full cache), from src/serve/web/index.html compiled into the binary.
#pragma once

namespace mkv::serve {

const char* web_page();

}  // namespace mkv::serve
