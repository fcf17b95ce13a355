// Aligned text tables for human output (`info`, `status`): columns padded to their widest cell.
#pragma once

#include <string>
#include <vector>

namespace gpufrac::cli {

class Table {
 public:
  explicit Table(std::vector<std::string> header, std::string indent = "");
  void add(std::vector<std::string> row);
  std::string render() const;
  bool empty() const { return rows_.size() <= 1; }  // no rows besides the header

 private:
  std::string indent_;
  std::vector<std::vector<std::string>> rows_;  // rows_[0] is the header
};

}  // namespace gpufrac::cli
