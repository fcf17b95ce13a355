// The program interpreter node setup writes into the installed CLI (cli/node/interp.hpp): read and
// replaced within the room the link left, on synthetic ELF files built here.
#include <elf.h>
#include <gtest/gtest.h>

#include <cstring>

#include "cli/node/interp.hpp"

namespace gpufrac::cli::node {
namespace {

// A 64-bit little-endian ELF header, one program header of `type`, then `room` bytes holding `interp`.
std::string make_elf(const std::string& interp, std::size_t room, std::uint32_t type = PT_INTERP) {
  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_type = ET_DYN;
  eh.e_machine = EM_X86_64;
  eh.e_phoff = sizeof eh;
  eh.e_phentsize = sizeof(Elf64_Phdr);
  eh.e_phnum = 1;
  Elf64_Phdr ph{};
  ph.p_type = type;
  ph.p_offset = sizeof eh + sizeof ph;
  ph.p_filesz = room;
  std::string out(sizeof eh + sizeof ph + room + 8, '\x7e');
  std::memcpy(out.data(), &eh, sizeof eh);
  std::memcpy(out.data() + sizeof eh, &ph, sizeof ph);
  std::memset(out.data() + ph.p_offset, 0, room);
  std::memcpy(out.data() + ph.p_offset, interp.data(), interp.size());
  return out;
}

const std::string kPadded = "/lib64/////////////////ld-linux-x86-64.so.2";

TEST(NodeInterp, ReadsThePathUpToItsNul) {
  auto p = program_interpreter(make_elf(kPadded, kPadded.size() + 1));
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(*p, kPadded);
}

TEST(NodeInterp, WritesAShorterPathPaddedWithNulAndTouchesNothingElse) {
  const std::string before = make_elf(kPadded, kPadded.size() + 1);
  std::string elf = before;
  const std::string path = "/opt/g/1.0/lib/ld-linux-x86-64.so.2";
  ASSERT_TRUE(set_program_interpreter(elf, path));
  ASSERT_EQ(elf.size(), before.size());
  const std::size_t at = sizeof(Elf64_Ehdr) + sizeof(Elf64_Phdr);
  EXPECT_EQ(elf.substr(0, at), before.substr(0, at));
  EXPECT_EQ(elf.substr(at, kPadded.size() + 1), path + std::string(kPadded.size() + 1 - path.size(), '\0'));
  EXPECT_EQ(elf.substr(at + kPadded.size() + 1), before.substr(at + kPadded.size() + 1));
  EXPECT_EQ(*program_interpreter(elf), path);
  // Again: the same bytes (setup compares before it writes).
  std::string again = elf;
  ASSERT_TRUE(set_program_interpreter(again, path));
  EXPECT_EQ(again, elf);
}

TEST(NodeInterp, APathThatFillsTheRoomExactlyFits) {
  std::string elf = make_elf("/x", 8);
  ASSERT_TRUE(set_program_interpreter(elf, "/abcdef"));
  EXPECT_EQ(*program_interpreter(elf), "/abcdef");
}

TEST(NodeInterp, ALongerPathIsRefusedNamingTheRoom) {
  std::string elf = make_elf("/x", 8);
  auto r = set_program_interpreter(elf, "/abcdefg");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "program interpreter \"/abcdefg\": 8 bytes, the program has room for 7; use a shorter --install-dir");
  EXPECT_EQ(*program_interpreter(elf), "/x");
}

TEST(NodeInterp, ARelativePathIsRefused) {
  std::string elf = make_elf(kPadded, kPadded.size() + 1);
  auto r = set_program_interpreter(elf, "lib/ld.so");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "program interpreter \"lib/ld.so\": must be an absolute path");
}

TEST(NodeInterp, AStaticProgramHasNone) {
  std::string elf = make_elf("", 8, PT_LOAD);
  auto r = set_program_interpreter(elf, "/x");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "no program interpreter (a static program)");
}

TEST(NodeInterp, BadFilesAreErrorsNotCrashes) {
  EXPECT_EQ(program_interpreter("#!/bin/sh\n").error().message, "not an ELF file");
  std::string elf = make_elf(kPadded, kPadded.size() + 1);
  elf[EI_CLASS] = ELFCLASS32;
  EXPECT_EQ(program_interpreter(elf).error().message, "not a 64-bit little-endian ELF file");
  elf = make_elf(kPadded, kPadded.size() + 1);
  EXPECT_EQ(program_interpreter(elf.substr(0, sizeof(Elf64_Ehdr) + 8)).error().message, "truncated program headers");
  elf = make_elf(kPadded, 4096);  // the segment runs past the end of the file
  EXPECT_EQ(program_interpreter(elf.substr(0, 300)).error().message, "PT_INTERP outside the file");
}

}  // namespace
}  // namespace gpufrac::cli::node
