// io.list_files: one item per file or per group, natural order, and its errors.
#include <unistd.h>

#include "io_support.hpp"

using namespace flowd;
using namespace flowd::iotest;

namespace {

// Empty files with these names in a fresh folder.
fs::path folder_with(const std::vector<std::string>& names) {
  const auto dir = test::scratch() / "in";
  fs::create_directories(dir);
  for (const auto& n : names) write_bytes(dir / n, "x");
  return dir;
}

std::vector<Item> list(const Json& params) { return items_of(harness("io.list_files", params).source()); }

std::string abs(const fs::path& p) { return fs::absolute(p).lexically_normal().string(); }

}  // namespace

TEST(ListFiles, OneItemPerFileInNaturalOrderWithItsPathAndName) {
  const auto dir = folder_with({"img10.png", "img2.JPG", "img1.tif", "notes.txt", ".hidden.png", "img3.jpeg"});
  fs::create_directories(dir / "sub.png");  // a folder, not a file
  auto h = harness("io.list_files", {{"dir", dir.string()}});
  const auto items = items_of(h.source());
  EXPECT_EQ(keys_of(items), (std::vector<std::string>{"img1", "img2", "img3", "img10"}));
  ASSERT_TRUE(h.expected());
  EXPECT_EQ(*h.expected(), 4u);
  ASSERT_EQ(items.size(), 4u);
  EXPECT_EQ(items[1].json(), (Json{{"path", abs(dir / "img2.JPG")}, {"name", "img2"}}));
  EXPECT_EQ(items[3].json(), (Json{{"path", abs(dir / "img10.png")}, {"name", "img10"}}));
  EXPECT_TRUE(fs::path(items[0].json()["path"].get<std::string>()).is_absolute());
}

TEST(ListFiles, ExtensionsAreCaseInsensitiveWithOrWithoutDotAndEmptyListsEverything) {
  const auto dir = folder_with({"a.TXT", "b.txt", "c.png", "d.tar.gz", "e.gz"});
  EXPECT_EQ(keys_of(list({{"dir", dir.string()}, {"extensions", {"txt"}}})), (std::vector<std::string>{"a", "b"}));
  // The longest listed extension is the one removed from the name.
  EXPECT_EQ(keys_of(list({{"dir", dir.string()}, {"extensions", {".gz", ".tar.gz"}}})),
            (std::vector<std::string>{"d", "e"}));
  EXPECT_EQ(keys_of(list({{"dir", dir.string()}, {"extensions", Json::array()}})),
            (std::vector<std::string>{"a", "b", "c", "d.tar", "e"}));
}

TEST(ListFiles, GroupsByTheRegexCaptureInNaturalOrder) {
  const auto dir = folder_with({"cam10_b.png", "cam2_img10.jpg", "cam2_img9.jpg", "cam10_a.png", "cam1_x_y.png"});
  auto h = harness("io.list_files", {{"dir", dir.string()}, {"group", "^(.*)_[^_]*$"}});
  const auto items = items_of(h.source());
  EXPECT_EQ(keys_of(items), (std::vector<std::string>{"cam1_x", "cam2", "cam10"}));
  EXPECT_EQ(*h.expected(), 3u);
  ASSERT_EQ(items.size(), 3u);
  EXPECT_EQ(items[1].json(), (Json{{"group", "cam2"},
                                   {"files", {abs(dir / "cam2_img9.jpg"), abs(dir / "cam2_img10.jpg")}},
                                   {"names", {"cam2_img9", "cam2_img10"}}}));
  EXPECT_EQ(items[2].json()["names"], (Json{"cam10_a", "cam10_b"}));
  EXPECT_EQ(items[0].json()["files"], (Json{abs(dir / "cam1_x_y.png")}));
}

TEST(ListFiles, MissingDirIsAnErrorNamingIt) {
  const auto root = test::scratch();
  const auto dir = root / "nowhere";
  const auto err = error_of([&] { list({{"dir", dir.string()}}); });
  EXPECT_NE(err.find("'" + dir.string() + "'"), std::string::npos) << err;
  EXPECT_NE(err.find("does not exist"), std::string::npos) << err;
  write_bytes(root / "file.png", "x");
  const auto not_dir = error_of([&] { list({{"dir", (root / "file.png").string()}}); });
  EXPECT_NE(not_dir.find("is not a folder"), std::string::npos) << not_dir;
}

TEST(ListFiles, UnreadableDirIsAnError) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads every folder";
  const auto dir = folder_with({"a.png"});
  fs::permissions(dir, fs::perms::none);
  const auto err = error_of([&] { list({{"dir", dir.string()}}); });
  fs::permissions(dir, fs::perms::owner_all);
  EXPECT_NE(err.find("cannot list folder '" + dir.string() + "'"), std::string::npos) << err;
}

TEST(ListFiles, NoMatchingFileIsAnErrorNamingDirAndExtensions) {
  const auto dir = folder_with({"a.txt", ".b.png"});
  const auto err = error_of([&] { list({{"dir", dir.string()}}); });
  EXPECT_NE(err.find("no files in '" + dir.string() + "'"), std::string::npos) << err;
  EXPECT_NE(err.find(".png"), std::string::npos) << err;
  EXPECT_NE(err.find("extensions"), std::string::npos) << err;
}

TEST(ListFiles, TwoFilesWithOneStemAreAnErrorNamingBoth) {
  const auto dir = folder_with({"a.jpg", "a.png", "b.png"});
  const auto err = error_of([&] { list({{"dir", dir.string()}}); });
  EXPECT_NE(err.find("'" + abs(dir / "a.jpg") + "' and '" + abs(dir / "a.png") + "'"), std::string::npos) << err;
}

TEST(ListFiles, AStemTheGroupRegexDoesNotMatchIsAnErrorNamingFileAndRegex) {
  const auto dir = folder_with({"cam1_a.png", "loose.png"});
  const auto err = error_of([&] { list({{"dir", dir.string()}, {"group", "^(.*)_[^_]*$"}}); });
  EXPECT_NE(err.find("'" + abs(dir / "loose.png") + "'"), std::string::npos) << err;
  EXPECT_NE(err.find("'^(.*)_[^_]*$'"), std::string::npos) << err;
  // A capture that matches nothing gives an empty group name: refused too.
  const auto empty = error_of([&] { list({{"dir", dir.string()}, {"group", "^([a-z]*)"}}); });
  EXPECT_EQ(empty, "");  // "cam" and "loose"
  const auto err2 = error_of([&] { list({{"dir", dir.string()}, {"group", "^(x*)"}}); });
  EXPECT_NE(err2.find("empty group name"), std::string::npos) << err2;
}

TEST(ListFiles, BadParametersAreParamErrors) {
  const std::string dir = test::scratch().string();
  const auto no_capture = param_error_of("io.list_files", {{"dir", dir}, {"group", "^.*_"}});
  EXPECT_TRUE(no_capture.starts_with("group: ")) << no_capture;
  EXPECT_NE(no_capture.find("no capture group"), std::string::npos) << no_capture;
  const auto bad_regex = param_error_of("io.list_files", {{"dir", dir}, {"group", "^(.*"}});
  EXPECT_TRUE(bad_regex.starts_with("group: ")) << bad_regex;
  EXPECT_NE(bad_regex.find("not a valid regular expression"), std::string::npos) << bad_regex;
  const auto bad_ext = param_error_of("io.list_files", {{"dir", dir}, {"extensions", {".png", 3}}});
  EXPECT_TRUE(bad_ext.starts_with("extensions: ")) << bad_ext;
  const auto not_array = param_error_of("io.list_files", {{"dir", dir}, {"extensions", ".png"}});
  EXPECT_TRUE(not_array.starts_with("extensions: ")) << not_array;
  EXPECT_NE(param_error_of("io.list_files", {{"dir", ""}}).find("dir: "), std::string::npos);
  EXPECT_NE(error_of([] { harness("io.list_files", Json::object()); }).find("dir"), std::string::npos);
}
