// A plain main for a fuzz target: runs LLVMFuzzerTestOneInput once on every file of the given corpus
// directories, so the ordinary build replays the committed inputs (and links the target as the fuzz
// build does) without libFuzzer.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size);

int main(int argc, char ** argv) {
    size_t replayed = 0;
    for (int i = 1; i < argc; ++i) {
        for (const auto & e : std::filesystem::directory_iterator(argv[i])) {
            if (!e.is_regular_file()) {
                continue;
            }
            std::ifstream in(e.path(), std::ios::binary);
            const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
            LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
            ++replayed;
        }
    }
    std::printf("replayed %zu inputs\n", replayed);
    return replayed > 0 ? 0 : 1;
}
