// Aligned text tables for human output (`info`, `status`): columns padded to their widest cell.
// Cells may hold ANSI colour sequences (ESC [ ... m): they take no width.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gpufrac::cli {

class Table {
 public:
  explicit Table(std::vector<std::string> header, std::string indent = "");
  void add(std::vector<std::string> row);
  std::string render() const;
  bool empty() const { return rows_.size() <= 1; }  // no rows besides the header
  // The rendered lines without their newlines (the header first).
  std::vector<std::string> lines() const;

 private:
  std::string indent_;
  std::vector<std::vector<std::string>> rows_;  // rows_[0] is the header
};

// Columns a cell takes on a terminal: bytes of ASCII, UTF-8 code points, ANSI colour sequences none.
std::size_t visible_width(std::string_view cell);

}  // namespace gpufrac::cli
