#include "workflow/substitute.hpp"

#include "util/text.hpp"

namespace flowd::workflow {

namespace {

// Suggestions cost one edit distance per variable; past this many distinct
// undefined names (a generated document gone wrong) they are left out.
constexpr std::size_t max_suggested = 32;
// Listed after "defined:" in a message; the rest are counted.
constexpr std::size_t max_listed = 10;

bool scalar(const OrderedJson& v) { return v.is_string() || v.is_number() || v.is_boolean(); }

// The same non-string scalar in the unordered flavour of JSON.
Json copy_scalar(const OrderedJson& v) {
  if (v.is_number_unsigned()) return v.get<OrderedJson::number_unsigned_t>();
  if (v.is_number_integer()) return v.get<OrderedJson::number_integer_t>();
  if (v.is_number_float()) return v.get<OrderedJson::number_float_t>();
  if (v.is_boolean()) return v.get<bool>();
  return Json::parse(v.dump());  // null, binary
}

}  // namespace

std::string Where::str() const {
  std::vector<const Where*> chain;
  for (const Where* w = this; w; w = w->parent_)
    chain.push_back(w);
  std::string p(chain.back()->root_);
  for (auto it = chain.rbegin() + 1; it != chain.rend(); ++it)
    p += (*it)->index_ != npos ? "/" + std::to_string((*it)->index_) : pointer({(*it)->key_});
  return p;
}

Substituter::Substituter(const OrderedJson& vars, Diagnostics& d) : vars_doc_(vars), d_(d) {
  if (!vars.is_object()) return;
  vars_.reserve(vars.size());
  for (const auto& [k, v] : vars.items())
    vars_.emplace(k, &v);
}

// What follows "undefined variable 'x'": suggestions and the defined names the
// first time a name is missed, nothing for its later uses.
std::string Substituter::undefined(const std::string& name) {
  if (undefined_.count(name)) return {};
  if (!names_) {
    names_.emplace();
    if (vars_doc_.is_object())
      for (const auto& [k, v] : vars_doc_.items())
        names_->push_back(k);
  }
  std::string tail;
  if (undefined_.size() < max_suggested) tail = did_you_mean(name, *names_);
  if (names_->empty()) {
    tail += "; the workflow defines no variables";
  } else if (names_->size() <= max_listed) {
    tail += "; defined: " + join(*names_, ", ");
  } else {
    tail += "; defined: " + join({names_->begin(), names_->begin() + max_listed}, ", ") + " ... (" +
            std::to_string(names_->size()) + " in all)";
  }
  undefined_.emplace(name);
  return tail;
}

// Counts text made by substitution; false (reported once) past the budget.
bool Substituter::spend(std::size_t bytes, const Where& at) {
  if (over_budget_) return false;
  produced_ += bytes;
  if (produced_ <= max_substituted_bytes) return true;
  over_budget_ = true;
  d_.add(at.str(), "variable substitution would produce more than " + std::to_string(max_substituted_bytes >> 20) +
                       " MiB of text in this workflow (variables that expand each other?); stopped here");
  return false;
}

Json Substituter::var(const std::string& name, const Where& at) {
  if (auto it = done_.find(name); it != done_.end()) return it->second;
  const auto found = vars_.find(name);
  if (found == vars_.end()) {
    d_.add(at.str(), "undefined variable '" + name + "'" + undefined(name));
    return Json();
  }
  const OrderedJson& raw = *found->second;
  // Scalars are substituted; a list (the parser allows lists of scalars)
  // is taken as written, so no variable nests another's structure inside
  // its own.
  if (!scalar(raw)) return Json::parse(raw.dump());
  if (active_.count(name)) {
    d_.add(pointer({"vars", name}), "variable '" + name + "' refers to itself through ${...}");
    return Json();
  }
  // Each reference in a chain of variables is one level of recursion here.
  if (active_.size() >= max_nesting_depth) {
    if (!too_deep_reported_)
      d_.add(pointer({"vars", name}), "variables refer to each other through more than " +
                                          std::to_string(max_nesting_depth) + " levels of ${...}");
    too_deep_reported_ = true;
    return Json();
  }
  active_.insert(name);
  const std::string root = pointer({"vars", name});
  Json v = value(raw, Where(root));
  active_.erase(name);
  return done_[name] = std::move(v);
}

Json Substituter::value(const OrderedJson& v, const Where& at) {
  if (v.is_array()) {
    Json out = Json::array();
    auto& elements = out.get_ref<Json::array_t&>();
    elements.reserve(v.size());
    for (std::size_t i = 0; i < v.size(); ++i)
      elements.push_back(value(v[i], at.element(i)));
    return out;
  }
  if (v.is_object()) {
    Json out = Json::object();
    auto& members = out.get_ref<Json::object_t&>();
    for (const auto& [k, x] : v.items())
      members.insert_or_assign(k, value(x, at.member(k)));
    return out;
  }
  if (!v.is_string()) return copy_scalar(v);
  const std::string& s = v.get_ref<const std::string&>();
  if (s.find('$') == std::string::npos) return s;
  if (s.size() > 3 && s.starts_with("${") && s.ends_with("}") && s.find("${", 2) == std::string::npos &&
      s.find('}') == s.size() - 1) {
    Json x = var(s.substr(2, s.size() - 3), at);
    if (x.is_string() && !spend(x.get_ref<const std::string&>().size(), at)) return Json();
    return x;
  }
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    if (s.compare(i, 3, "$${") == 0) {
      out += "${";
      i += 3;
    } else if (s.compare(i, 2, "${") == 0) {
      const auto close = s.find('}', i + 2);
      if (close == std::string::npos) {
        d_.add(at.str(), "unterminated '${' in \"" + s + "\"");
        return s;
      }
      const Json x = var(s.substr(i + 2, close - i - 2), at);
      if (x.is_array()) {
        d_.add(at.str(), "variable '" + s.substr(i + 2, close - i - 2) +
                             "' is a list: it can only be a whole value (\"${" + s.substr(i + 2, close - i - 2) +
                             "}\"), not part of \"" + s + "\"");
        return s;  // reported once, here: no follow-on error about the value's type
      }
      const std::string piece = x.is_string() ? x.get<std::string>() : (x.is_null() ? "" : x.dump());
      if (!spend(piece.size(), at)) return Json();
      out += piece;
      i = close + 1;
    } else {
      out += s[i++];
    }
  }
  return out;
}

}  // namespace flowd::workflow
