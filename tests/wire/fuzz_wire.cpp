// libFuzzer target for the wire decoder: arbitrary bytes, split into
// multipart messages (wire_helpers.hpp), go through decode(), and an
// item_data followed by item_chunk messages through an ItemAssembler, as a
// receiving node would. Any crash, sanitizer report or escaping exception
// is a bug in the decoder.
#include <cstddef>
#include <cstdint>
#include <optional>

#include "wire/wire.hpp"
#include "wire_helpers.hpp"

using namespace flowd::wire;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  bool reseal = false;
  const auto messages =
      testing::parse_fuzz_input(std::span(reinterpret_cast<const std::byte*>(data), size), reseal);
  static const Limits limits = testing::fuzz_limits();
  std::optional<ItemAssembler> assembler;
  for (const auto& m : messages) {
    const auto views = m.views();
    auto decoded = decode(views, limits);
    if (!decoded) {
      (void)decoded.error().describe();
      if (!views.empty()) (void)peek_header(views[0]);
      continue;
    }
    if (const auto* d = std::get_if<ItemData>(&decoded->body)) {
      (void)decode_item(views, limits);
      auto a = ItemAssembler::start(*d, decoded->payload, limits);
      if (a) assembler.emplace(std::move(a).value());
    } else if (const auto* c = std::get_if<ItemChunk>(&decoded->body)) {
      if (assembler) (void)assembler->add(*c, decoded->payload.at(0));
    } else {
      // Whatever decodes must encode again. JSON may re-serialise longer
      // ("1E2" becomes "100.0"), so only a size limit may refuse it.
      auto again = encode(decoded->header.seq, decoded->body, limits);
      if (!again && again.error().code != RejectCode::too_large) __builtin_trap();
    }
  }
  if (assembler) {
    (void)assembler->missing();
    auto item = assembler->finish();
    if (item && assembler->finish().ok()) __builtin_trap();  // finish() is once only
  }
  return 0;
}
