// The main of every Google Benchmark binary in bench/: the usual console output, then one line per
// requested ratio, "ratio A / B (median real time): x", from each benchmark's median real time (or
// its only run's when there are no repetitions). Ratios against a baseline measured in the same
// process are what bench/README.md records.
#pragma once

#include <unistd.h>

#include <benchmark/benchmark.h>

#include <cstdio>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace gpufrac::bench {

struct Ratio {
  const char* numerator;
  const char* denominator;
};

class RatioReporter : public benchmark::ConsoleReporter {
 public:
  explicit RatioReporter(bool color) : ConsoleReporter(color ? OO_ColorTabular : OO_Tabular) {}
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      bool median = r.run_type == Run::RT_Aggregate && r.aggregate_name == "median";
      if (median || (r.run_type == Run::RT_Iteration && r.repetitions <= 1))
        times[r.run_name.function_name] = r.GetAdjustedRealTime();
    }
  }
  std::map<std::string, double> times;
};

// Runs the registered benchmarks and prints the ratios; returns main's exit status.
inline int run_with_ratios(int argc, char** argv, std::initializer_list<Ratio> ratios, int precision = 2) {
  bool color = ::isatty(STDOUT_FILENO);
  for (int i = 1; i < argc; ++i)
    if (std::string_view(argv[i]) == "--benchmark_color=false") color = false;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  RatioReporter reporter(color);
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  auto& t = reporter.times;
  for (const Ratio& r : ratios)
    if (t.count(r.numerator) && t.count(r.denominator) && t[r.denominator] > 0)
      std::printf("ratio %s / %s (median real time): %.*f\n", r.numerator, r.denominator, precision,
                  t[r.numerator] / t[r.denominator]);
  return 0;
}

}  // namespace gpufrac::bench
