// llama-bench-style timing of llama.cpp's own engine (the prebuilt libllama of the npm package
// @node-llama-cpp/linux-x64), so that momentkv can be compared with it side by side on one host.
// The package ships no header: llama_batch is laid out by hand (stable for years), and the
// parameter structs are opaque blocks filled by the library's defaults, with n_ctx, n_batch,
// n_ubatch and the thread counts written at their long-standing offsets (0, 4, 8, 16, 20).
// Usage: llama_timer MODEL N_PROMPT N_GEN REPETITIONS THREADS   (one of N_PROMPT, N_GEN is 0)
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>
extern "C" {
struct llama_batch { int32_t n_tokens; int32_t* token; float* embd; int32_t* pos; int32_t* n_seq_id; int32_t** seq_id; int8_t* logits; };
struct Opaque { alignas(16) unsigned char bytes[2048]; };
Opaque llama_model_default_params();
Opaque llama_context_default_params();
void llama_backend_init();
void ggml_backend_load_all_from_path(const char*);
void* llama_model_load_from_file(const char*, Opaque);
void* llama_init_from_model(void*, Opaque);
llama_batch llama_batch_get_one(int32_t*, int32_t);
int32_t llama_decode(void*, llama_batch);
void llama_set_n_threads(void*, int32_t, int32_t);
void* llama_get_memory(void*);
void llama_memory_clear(void*, bool);
void llama_synchronize(void*);
}
static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
int main(int argc, char** argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: %s MODEL N_PROMPT N_GEN REPETITIONS THREADS\n", argv[0]);
    return 2;
  }
  const char* model_path = argv[1];
  const int n_prompt = atoi(argv[2]), n_gen = atoi(argv[3]), reps = atoi(argv[4]), threads = atoi(argv[5]);
  ggml_backend_load_all_from_path(std::getenv("LLAMACPP_LIB_DIR"));
  llama_backend_init();
  Opaque mp = llama_model_default_params();
  void* model = llama_model_load_from_file(model_path, mp);
  if (!model) { fprintf(stderr, "load failed\n"); return 1; }
  Opaque cp = llama_context_default_params();
  uint32_t n_ctx = n_prompt + n_gen + 16, n_batch = 512, n_ubatch = 512;
  memcpy(cp.bytes + 0, &n_ctx, 4); memcpy(cp.bytes + 4, &n_batch, 4); memcpy(cp.bytes + 8, &n_ubatch, 4);
  memcpy(cp.bytes + 16, &threads, 4); memcpy(cp.bytes + 20, &threads, 4);
  void* ctx = llama_init_from_model(model, cp);
  if (!ctx) { fprintf(stderr, "context failed\n"); return 1; }
  llama_set_n_threads(ctx, threads, threads);
  std::mt19937 rng(1);
  std::uniform_int_distribution<int32_t> tok(100, 30000);
  auto run_prompt = [&](int n) {
    for (int start = 0; start < n; start += 512) {
      std::vector<int32_t> t(std::min(512, n - start));
      for (auto& v : t) v = tok(rng);
      if (llama_decode(ctx, llama_batch_get_one(t.data(), (int32_t)t.size())) != 0) { fprintf(stderr, "decode failed\n"); exit(1); }
    }
    llama_synchronize(ctx);
  };
  auto run_gen = [&](int n) {
    for (int i = 0; i < n; ++i) {
      int32_t t = tok(rng);
      if (llama_decode(ctx, llama_batch_get_one(&t, 1)) != 0) { fprintf(stderr, "decode failed\n"); exit(1); }
      llama_synchronize(ctx);
    }
  };
  // warm-up
  llama_memory_clear(llama_get_memory(ctx), true);
  if (n_prompt) run_prompt(std::min(n_prompt, 32)); else run_gen(4);
  std::vector<double> tps;
  for (int r = 0; r < reps; ++r) {
    llama_memory_clear(llama_get_memory(ctx), true);
    const double t0 = now();
    if (n_prompt) run_prompt(n_prompt); else run_gen(n_gen);
    tps.push_back((n_prompt ? n_prompt : n_gen) / (now() - t0));
  }
  double m = 0, s = 0; for (double v : tps) m += v; m /= tps.size(); for (double v : tps) s += (v - m) * (v - m);
  printf("llama.cpp %s %s%d: %.2f ± %.2f t/s\n", model_path, n_prompt ? "pp" : "tg", n_prompt ? n_prompt : n_gen, m, tps.size() > 1 ? std::sqrt(s / (tps.size() - 1)) : 0.0);
}
