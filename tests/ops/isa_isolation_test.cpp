// AVX-512 instructions only where CPUID lets them run: disassembles this test binary (and the
// momentkv binary, when it is built) and checks that every function holding an AVX-512
// instruction (EVEX-encoded, or on the opmask registers) belongs to the AVX-512 kernel variant
// (kernels_avx512.cpp: mkv::kernels::avx512 and the avx512 copies of the inline helpers), and that
// no static initialiser holds one. The emulated variant's namespace (avx512_emulated, compiled for
// AVX2 on SIMDe) does not count as the AVX-512 variant's: it must hold none. An AVX-512 copy of a
// shared inline function chosen by the linker for everybody would show up here as a function
// outside those namespaces.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Scan {
  long allowed = 0;                // AVX-512 instructions in AVX-512 variant functions
  std::vector<std::string> leaks;  // "function: instruction" outside them (first few)
  long leak_count = 0;
};

// Whether an `objdump -d -w` instruction line holds an AVX-512 instruction: its first opcode byte
// (after address-size and segment prefixes) is EVEX's 0x62, which in 64-bit mode is nothing else,
// or it works on the opmask registers (VEX-encoded k instructions).
bool is_avx512(const std::string& bytes, const std::string& text) {
  static const std::regex opmask(R"(^\s*k(mov|and|andn|or|xor|xnor|not|ortest|test|shiftl|shiftr|unpck|add)[bwdq]?\b)");
  std::istringstream in(bytes);
  std::string byte;
  while (in >> byte && (byte == "67" || byte == "64" || byte == "65" || byte == "2e" || byte == "3e" ||
                        byte == "26" || byte == "36")) {
  }
  return byte == "62" || std::regex_search(text, opmask);
}

Scan scan_binary(const std::string& path) {
  Scan scan;
  const std::string cmd = "objdump -d -w -C '" + path + "' 2>/dev/null";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  if (!pipe) return scan;
  std::string function;
  bool function_allowed = false;
  char buf[8192];
  while (std::fgets(buf, sizeof buf, pipe.get())) {
    std::string line(buf);
    if (!line.empty() && line.back() == '\n') line.pop_back();
    if (line.size() > 2 && line.compare(line.size() - 2, 2, ">:") == 0 && line.find(" <") != std::string::npos) {
      function = line.substr(line.find(" <") + 2, line.size() - line.find(" <") - 4);
      function_allowed = function.find("::avx512::") != std::string::npos && function.rfind("_GLOBAL__", 0) != 0;
      continue;
    }
    const std::size_t tab1 = line.find('\t');
    const std::size_t tab2 = tab1 == std::string::npos ? tab1 : line.find('\t', tab1 + 1);
    if (tab2 == std::string::npos) continue;
    const std::string text = line.substr(tab2 + 1);
    if (!is_avx512(line.substr(tab1 + 1, tab2 - tab1 - 1), text)) continue;
    if (function_allowed) {
      ++scan.allowed;
    } else if (scan.leak_count++ < 10) {
      scan.leaks.push_back(function + ": " + text);
    }
  }
  return scan;
}

bool have_objdump() { return std::system("objdump --version > /dev/null 2>&1") == 0; }

void check_binary(const std::string& path) {
  SCOPED_TRACE(path);
  const Scan scan = scan_binary(path);
  std::string leaks;
  for (const auto& l : scan.leaks) leaks += "\n  " + l;
  EXPECT_EQ(scan.leak_count, 0) << "AVX-512 instructions outside the AVX-512 kernel variant:" << leaks;
#if MOMENTKV_NATIVE
  EXPECT_GT(scan.allowed, 1000) << "the AVX-512 variant should be linked in (and the scan should see it)";
#else
  EXPECT_EQ(scan.allowed, 0);
#endif
  std::printf("%s: %ld AVX-512 instructions, all in the AVX-512 variant's functions\n", path.c_str(), scan.allowed);
}

TEST(IsaIsolation, Avx512InstructionsStayInTheAvx512VariantOfThisBinary) {
  if (!have_objdump()) GTEST_SKIP() << "objdump (binutils) is not installed";
  check_binary(std::filesystem::read_symlink("/proc/self/exe"));  // objdump wants a regular file
}

TEST(IsaIsolation, Avx512InstructionsStayInTheAvx512VariantOfMomentkv) {
  if (!have_objdump()) GTEST_SKIP() << "objdump (binutils) is not installed";
  const std::string bin = MOMENTKV_BIN;
  if (!std::filesystem::exists(bin)) GTEST_SKIP() << bin << " is not built";
  check_binary(bin);
}

}  // namespace
