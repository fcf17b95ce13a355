#include "metrics/exposition.hpp"

#include <charconv>
#include <cmath>

namespace gpufrac::metrics {

namespace {

const char* type_name(Type t) {
  switch (t) {
    case Type::gauge:
      return "gauge";
    case Type::counter:
      return "counter";
    case Type::histogram:
      break;
  }
  return "histogram";
}

std::string escape_help(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string labels_text(const Labels& labels) {
  if (labels.empty()) return "";
  std::string out = "{";
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (i) out += ",";
    out += labels[i].first + "=\"" + escape_label_value(labels[i].second) + "\"";
  }
  return out + "}";
}

}  // namespace

std::string escape_label_value(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string format_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : "NaN";
}

Family::Family(std::string name, Type type, std::string help)
    : name_(std::move(name)), type_(type), help_(std::move(help)) {}

Family& Family::add(Labels labels, std::uint64_t value) {
  samples_.push_back({"", std::move(labels), std::to_string(value)});
  return *this;
}

Family& Family::add_double(Labels labels, double value) {
  samples_.push_back({"", std::move(labels), format_value(value)});
  return *this;
}

Family& Family::add_histogram(Labels labels, const std::vector<double>& bounds,
                              const std::vector<std::uint64_t>& buckets, double sum) {
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i <= bounds.size(); ++i) {
    cumulative += i < buckets.size() ? buckets[i] : 0;
    Labels l = labels;
    l.emplace_back("le", i < bounds.size() ? format_value(bounds[i]) : "+Inf");
    samples_.push_back({"_bucket", std::move(l), std::to_string(cumulative)});
  }
  samples_.push_back({"_sum", labels, format_value(sum)});
  samples_.push_back({"_count", std::move(labels), std::to_string(cumulative)});
  return *this;
}

std::string Family::render() const {
  std::string out = "# HELP " + name_ + " " + escape_help(help_) + "\n# TYPE " + name_ + " " + type_name(type_) + "\n";
  for (const auto& s : samples_) out += name_ + s.suffix + labels_text(s.labels) + " " + s.value + "\n";
  return out;
}

std::string render(const std::vector<Family>& families) {
  std::string out;
  for (const auto& f : families) out += f.render();
  return out;
}

}  // namespace gpufrac::metrics
