#include "cli/table.hpp"

#include <algorithm>

namespace gpufrac::cli {

Table::Table(std::vector<std::string> header, std::string indent) : indent_(std::move(indent)) {
  rows_.push_back(std::move(header));
}

void Table::add(std::vector<std::string> row) {
  row.resize(rows_.front().size());
  rows_.push_back(std::move(row));
}

std::string Table::render() const {
  std::vector<std::size_t> width(rows_.front().size(), 0);
  for (const auto& row : rows_)
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  std::string out;
  for (const auto& row : rows_) {
    std::string line = indent_;
    for (std::size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line.append(width[i] - row[i].size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

}  // namespace gpufrac::cli
