#include <gtest/gtest.h>

#include "support/helpers.hpp"
#include "util/fs.hpp"
#include "util/sha256.hpp"
#include "util/text.hpp"

using namespace flowd;

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(Sha256::hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256::hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256::hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(Sha256::hex(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Text, SuggestsCloseNames) {
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(did_you_mean("min_aera", {"min_area", "max_area"}), " (did you mean 'min_area'?)");
  EXPECT_EQ(did_you_mean("zzzzzz", {"min_area"}), "");
}

TEST(Fs, AtomicWriteLeavesNoTemporary) {
  const auto dir = test::scratch();
  write_file_atomic(dir / "a.txt", "hello");
  EXPECT_EQ(read_file(dir / "a.txt"), "hello");
  write_file_atomic(dir / "a.txt", "again");
  EXPECT_EQ(read_file(dir / "a.txt"), "again");
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++files;
  EXPECT_EQ(files, 1u);
  EXPECT_THROW(write_file_atomic(dir / "missing-dir" / "b.txt", "x"), Error);
  EXPECT_THROW(read_file(dir / "nope"), Error);
  const auto tmp = temp_path_for(dir / "x.png");
  EXPECT_EQ(tmp.extension(), ".png");
  EXPECT_EQ(tmp.filename().string().rfind(".x.flowd-tmp-", 0), 0u);
}
