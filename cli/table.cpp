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

std::size_t visible_width(std::string_view cell) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < cell.size(); ++i) {
    if (cell[i] == '\033' && i + 1 < cell.size() && cell[i + 1] == '[') {
      while (i < cell.size() && cell[i] != 'm') ++i;
      continue;
    }
    if ((static_cast<unsigned char>(cell[i]) & 0xC0) != 0x80) ++n;  // not a UTF-8 continuation byte
  }
  return n;
}

std::vector<std::string> Table::lines() const {
  std::vector<std::size_t> width(rows_.front().size(), 0);
  for (const auto& row : rows_)
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], visible_width(row[i]));
  std::vector<std::string> out;
  for (const auto& row : rows_) {
    std::string line = indent_;
    for (std::size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line.append(width[i] - visible_width(row[i]) + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out.push_back(std::move(line));
  }
  return out;
}

std::string Table::render() const {
  std::string out;
  for (const auto& line : lines()) out += line + "\n";
  return out;
}

}  // namespace gpufrac::cli
