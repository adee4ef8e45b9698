#include "workflow/json_reader.hpp"

#include <fstream>
#include <sstream>
#include <unordered_map>
#include <utility>

namespace flowd::workflow {

namespace {

std::string escape_token(std::string_view key) {
  std::string t;
  t.reserve(key.size());
  for (char c : key) {
    if (c == '~')
      t += "~0";
    else if (c == '/')
      t += "~1";
    else
      t += c;
  }
  return t;
}

// nlohmann's parser is iterative and reports each token to this handler,
// which builds the document itself: it can stop at the first level too deep
// (before anything recursive sees the document), see duplicate keys, and
// append members in constant time where ordered_json's operator[] would
// search the object first (quadratic in an object's size).
class Builder {
public:
  Builder(std::size_t max_depth, JsonRead& out) : max_depth_(max_depth), out_(out) {}

  bool null() { return put(OrderedJson(nullptr)) != nullptr; }
  bool boolean(bool v) { return put(OrderedJson(v)) != nullptr; }
  bool number_integer(OrderedJson::number_integer_t v) { return put(OrderedJson(v)) != nullptr; }
  bool number_unsigned(OrderedJson::number_unsigned_t v) { return put(OrderedJson(v)) != nullptr; }
  bool number_float(OrderedJson::number_float_t v, const std::string&) { return put(OrderedJson(v)) != nullptr; }
  bool string(std::string& v) { return put(OrderedJson(std::move(v))) != nullptr; }
  bool binary(OrderedJson::binary_t& v) { return put(OrderedJson::binary(std::move(v))) != nullptr; }

  bool start_object(std::size_t) { return open(OrderedJson::object()); }
  bool start_array(std::size_t) { return open(OrderedJson::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(std::string& k) {
    auto& f = frames_.back();
    if (f.members.count(k)) {
      if (out_.duplicates.size() < max_reported_duplicates)
        out_.duplicates.push_back(
            {pointer() + "/" + escape_token(k), "duplicate key '" + k + "' (only one is allowed)"});
      else
        ++more_duplicates_;
    }
    f.key = std::move(k);
    return true;
  }

  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) {
    out_.failure = JsonRead::Failure::syntax;
    out_.byte = position > 0 ? position - 1 : 0;
    std::string msg = e.what();
    if (auto colon = msg.find(": "); colon != std::string::npos && msg.find("parse error") != std::string::npos)
      msg = msg.substr(colon + 2);
    out_.message = "invalid JSON: " + msg;
    return false;
  }

  OrderedJson take() {
    if (more_duplicates_ > 0)
      out_.duplicates.push_back({"/", "and " + std::to_string(more_duplicates_) + " more duplicate keys"});
    return std::move(root_);
  }

private:
  struct Frame {
    OrderedJson* node;
    std::string token;                                     // this container's reference token in its parent, escaped
    std::string key;                                       // objects: the key of the value that comes next
    std::unordered_map<std::string, std::size_t> members;  // objects: key -> position
  };

  // The pointer of the innermost open container, built only when reported:
  // frames hold their own token, not their whole path, so open frames cost
  // memory linear in the input rather than quadratic in the depth.
  std::string pointer() const {
    std::string p;
    for (std::size_t i = 1; i < frames_.size(); ++i)
      p += "/" + frames_[i].token;
    return p;
  }

  // Places `v` where the next value goes; returns where it now lives.
  OrderedJson* put(OrderedJson v) {
    if (frames_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    auto& f = frames_.back();
    if (f.node->is_array()) {
      f.node->push_back(std::move(v));
      return &f.node->back();
    }
    using Members = OrderedJson::object_t;
    auto& members = f.node->get_ref<Members&>();
    if (auto it = f.members.find(f.key); it != f.members.end()) {
      auto& slot = (members.begin() + static_cast<std::ptrdiff_t>(it->second))->second;
      slot = std::move(v);
      return &slot;
    }
    f.members.emplace(f.key, members.size());
    // The vector's own emplace_back: ordered_map::emplace would look the key
    // up first, which f.members has just done.
    members.Members::Container::emplace_back(f.key, std::move(v));
    return &members.back().second;
  }

  bool open(OrderedJson container) {
    std::string token;
    if (!frames_.empty()) {
      const auto& parent = frames_.back();
      token = parent.node->is_array() ? std::to_string(parent.node->size()) : escape_token(parent.key);
    }
    if (frames_.size() + 1 > max_depth_) {
      out_.failure = JsonRead::Failure::too_deep;
      out_.pointer = pointer() + (frames_.empty() ? "" : "/" + token);
      out_.message = "arrays and objects nested deeper than " + std::to_string(max_depth_) +
                     " levels; flowd reads at most " + std::to_string(max_depth_) + " here";
      return false;
    }
    OrderedJson* node = put(std::move(container));
    frames_.push_back({node, std::move(token), {}, {}});
    return true;
  }

  bool close() {
    frames_.pop_back();
    return true;
  }

  std::size_t max_depth_;
  JsonRead& out_;
  OrderedJson root_;
  std::vector<Frame> frames_;
  std::size_t more_duplicates_ = 0;
};

// The offset of the bracket that opens level `depth` + 1, counting only
// brackets outside strings. Called after the parser stopped there, so the text
// before it is valid JSON and this simple scan agrees with the parser.
std::size_t offset_of_level(std::string_view text, std::size_t depth) {
  std::size_t level = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++level > depth) return i;
    } else if (c == ']' || c == '}') {
      --level;
    }
  }
  return text.size();
}

}  // namespace

JsonRead read_json(std::string_view text, std::size_t max_depth) {
  JsonRead out;
  Builder builder(max_depth, out);
  const bool ok = OrderedJson::sax_parse(text.begin(), text.end(), &builder);
  if (!ok && out.failure == JsonRead::Failure::too_deep) out.byte = offset_of_level(text, max_depth);
  out.value = builder.take();
  if (!ok) out.value = nullptr;
  return out;
}

std::string line_column(std::string_view text, std::size_t offset) {
  std::size_t line = 1, col = 1;
  const std::size_t end = std::min(offset, text.size());
  for (std::size_t i = 0; i < end; ++i) {
    if (text[i] == '\n')
      ++line, col = 1;
    else
      ++col;
  }
  return std::to_string(line) + ":" + std::to_string(col);
}

std::string shorten_pointer(std::string_view pointer, std::size_t keep) {
  std::size_t tokens = 0, cut = pointer.size();
  for (std::size_t i = 0; i < pointer.size(); ++i)
    if (pointer[i] == '/' && ++tokens == keep + 1) cut = i;
  if (tokens <= keep) return std::string(pointer);
  return std::string(pointer.substr(0, cut)) + "/...(" + std::to_string(tokens - keep) + " more levels)";
}

nlohmann::json read_json_file(const std::filesystem::path& file, const std::string& what) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error("cannot read the " + what + " '" + file.string() + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  JsonRead r = read_json(text);
  const std::string name = file.string();
  if (r.failure == JsonRead::Failure::syntax)
    throw ValidationError(name, {{name + ":" + line_column(text, r.byte), r.message}});
  if (r.failure == JsonRead::Failure::too_deep)
    throw ValidationError(name, {{shorten_pointer(r.pointer), r.message}});
  if (!r.duplicates.empty()) throw ValidationError(name, std::move(r.duplicates));
  return nlohmann::json::parse(r.value.dump());
}

}  // namespace flowd::workflow
