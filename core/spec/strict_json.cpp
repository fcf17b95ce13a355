#include "core/spec/strict_json.hpp"

#include <set>
#include <string>
#include <vector>

#include "core/text.hpp"

namespace gpufrac {

namespace {

using json = nlohmann::json;

// The SAX pass: counts, depth, and the keys seen in each open object (to find duplicates).
class StrictSax : public nlohmann::json_sax<json> {
 public:
  StrictSax(const JsonLimits& limits, const JsonStringVisitor* strings) : limits_(limits), strings_(strings) {}
  std::string problem;  // empty: the document is fine

  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool string(string_t& s) override {
    if (!value()) return false;
    if (strings_ != nullptr) {
      path_.clear();
      for (const Frame& f : frames_) path_.push_back({f.object, f.key, f.index == 0 ? 0 : f.index - 1});
      (*strings_)(path_, s);
    }
    return true;
  }
  bool binary(binary_t&) override { return fail("binary values are not JSON"); }
  bool start_object(std::size_t) override { return open(true); }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(false); }
  bool end_array() override { return close(); }
  bool key(string_t& k) override {
    Frame& f = frames_.back();
    if (!f.keys.insert(k).second)
      return fail(text::cat("duplicate key ", text::quote(k), " in the object at ", where(frames_.size() - 1)));
    f.key = k;
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) override {
    std::string message = e.what();
    if (auto at = message.find("] "); at != std::string::npos) message = message.substr(at + 2);
    return fail(text::cat("invalid JSON at byte ", position, ": ", message));
  }

 private:
  struct Frame {
    bool object = false;
    std::set<std::string> keys;
    std::string key;        // the member being read (objects)
    std::size_t index = 0;  // the element being read (arrays)
  };
  bool value() {
    if (++values_ > limits_.max_values) return fail(text::cat("more than ", limits_.max_values, " values"));
    if (!frames_.empty() && !frames_.back().object) ++frames_.back().index;
    return true;
  }
  bool open(bool object) {
    if (!value()) return false;
    if (frames_.size() >= limits_.max_depth)
      return fail(text::cat("nested deeper than ", limits_.max_depth, " levels at ", where()));
    frames_.push_back(Frame{object, {}, {}, 0});
    return true;
  }
  bool close() {
    frames_.pop_back();
    return true;
  }
  // A JSON pointer of the place being read (its first `levels` open containers), e.g. /linux/namespaces/2.
  std::string where(std::size_t levels = SIZE_MAX) const {
    std::string out;
    for (std::size_t i = 0; i < frames_.size() && i < levels; ++i) {
      const Frame& f = frames_[i];
      out += "/" + (f.object ? f.key : text::cat(f.index == 0 ? 0 : f.index - 1));
    }
    return out.empty() ? "/" : out;
  }
  bool fail(std::string why) {
    if (problem.empty()) problem = std::move(why);
    return false;
  }
  const JsonLimits& limits_;
  const JsonStringVisitor* strings_;
  std::vector<JsonPathStep> path_;
  std::vector<Frame> frames_;
  std::size_t values_ = 0;
};

}  // namespace

Result<> check_strict_json(std::string_view text, std::string_view what, const JsonLimits& limits,
                           const JsonStringVisitor* strings) {
  if (text.size() > limits.max_bytes)
    return user_error(text::cat(what, ": ", text.size(), " bytes, more than the ", limits.max_bytes, " accepted"));
  // nlohmann's lexer ends the input at a NUL byte, a Go decoder refuses it: what follows one would
  // never be checked. JSON has no NUL outside escapes, so any is refused.
  if (auto nul = text.find('\0'); nul != std::string_view::npos)
    return user_error(text::cat(what, ": a NUL byte at byte ", nul,
                                "; gpufrac reads only JSON that every runtime reads the same way"));
  StrictSax sax(limits, strings);
  const bool ok = json::sax_parse(text, &sax, json::input_format_t::json, true);
  if (!ok || !sax.problem.empty())
    return user_error(text::cat(what, ": ", sax.problem.empty() ? std::string("invalid JSON") : sax.problem,
                                "; gpufrac reads only JSON that every runtime reads the same way"));
  return {};
}

Result<json> parse_strict_json(std::string_view text, std::string_view what, const JsonLimits& limits) {
  if (auto r = check_strict_json(text, what, limits); !r) return std::unexpected(r.error());
  return json::parse(text);  // checked: no exception, bounded size
}

}  // namespace gpufrac
