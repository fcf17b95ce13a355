// The Prometheus text exposition format (version 0.0.4), written exactly: one HELP and one TYPE
// line per family, then its samples; label values escaped (\\, \", \n); integers printed as
// integers, other values with as many digits as it takes to read them back; histograms as
// cumulative _bucket{le=...} samples ending with le="+Inf", then _sum and _count.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace gpufrac::metrics {

using Labels = std::vector<std::pair<std::string, std::string>>;

enum class Type { gauge, counter, histogram };

struct Sample {
  std::string suffix;  // "" or _bucket, _sum, _count
  Labels labels;
  std::string value;  // already formatted
};

class Family {
 public:
  Family(std::string name, Type type, std::string help);
  Family& add(Labels labels, std::uint64_t value);
  Family& add_double(Labels labels, double value);
  // A histogram sample set: per-bucket (not cumulative) counts for `bounds` plus one for +Inf.
  Family& add_histogram(Labels labels, const std::vector<double>& bounds, const std::vector<std::uint64_t>& buckets,
                        double sum);
  const std::string& name() const { return name_; }
  const std::vector<Sample>& samples() const { return samples_; }
  std::string render() const;

 private:
  std::string name_;
  Type type_;
  std::string help_;
  std::vector<Sample> samples_;
};

std::string render(const std::vector<Family>& families);
// Go's strconv.FormatFloat(v, 'g', -1, 64) for the values we write: shortest text that reads back.
std::string format_value(double v);
std::string escape_label_value(const std::string& v);

}  // namespace gpufrac::metrics
