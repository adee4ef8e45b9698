// Plugin discovery, refusal of bad plugins, the manifest cache, lazy opening.
#include <gtest/gtest.h>

#include <fstream>

#include "flowd/abi.hpp"
#include "support/helpers.hpp"
#include "util/fs.hpp"
#include "util/text.hpp"

using namespace flowd;
namespace fs = std::filesystem;

namespace {

std::string problems(const plugin::Registry& r) { return join(r.problems(), "\n"); }

fs::path testops_so() { return fs::path(test::test_plugins("testops")) / "flowd-testops.so"; }

}  // namespace

TEST(Registry, FindsOperatorsWithTheirPlugin) {
  auto r = test::default_registry();
  ASSERT_NE(r.find("test.step"), nullptr);
  EXPECT_EQ(r.find("test.step")->pattern, Pattern::map);
  EXPECT_EQ(r.provider("test.step")->version, "1.2.3");
  EXPECT_EQ(r.provider("test.step")->path.filename(), "flowd-testops.so");
  ASSERT_NE(r.find("image.gaussian"), nullptr);
  EXPECT_EQ(r.find("test.sum")->pattern, Pattern::reduce);
  EXPECT_TRUE(r.problems().empty()) << problems(r);
}

TEST(Registry, UnknownOperatorSuggestsTheClosestName) {
  auto r = test::default_registry();
  EXPECT_EQ(r.find("test.stpe"), nullptr);
  const auto why = r.explain("test.stpe");
  EXPECT_NE(why.find("unknown operator 'test.stpe' (did you mean 'test.step'?)"), std::string::npos) << why;
  EXPECT_THROW(r.open("test.stpe"), Error);
}

TEST(Registry, RefusesAPluginBuiltForAnotherAbi) {
  auto r = test::registry({test::test_plugins("wrongabi")});
  ASSERT_EQ(r.problems().size(), 1u);
  EXPECT_NE(problems(r).find("flowd-wrongabi.so: refused: built for flowd plugin ABI 999 but this engine uses ABI " +
                             std::to_string(flowd::abi_version)),
            std::string::npos)
      << problems(r);
  EXPECT_EQ(r.find("future.op"), nullptr);
  // The manifest is still read, so the message for its operator says why.
  const auto why = r.explain("future.op");
  EXPECT_NE(why.find("flowd-wrongabi.so, which was refused: built for flowd plugin ABI 999"), std::string::npos) << why;
}

TEST(Registry, RefusesALibraryThatIsNotAPlugin) {
  auto r = test::registry({test::test_plugins("notplugin")});
  ASSERT_EQ(r.problems().size(), 1u);
  EXPECT_NE(problems(r).find("not-a-plugin.so: refused: not a flowd plugin"), std::string::npos) << problems(r);
}

TEST(Registry, RefusesCorruptFiles) {
  const auto dir = test::scratch();
  std::ofstream(dir / "garbage.so") << "this is not an ELF file";
  const std::string real = read_file(testops_so());
  std::ofstream(dir / "truncated.so", std::ios::binary) << real.substr(0, real.size() / 3);
  auto r = test::registry({dir.string()});
  const auto p = problems(r);
  EXPECT_NE(p.find("garbage.so: refused: not a valid shared library"), std::string::npos) << p;
  EXPECT_NE(p.find("truncated.so: refused:"), std::string::npos) << p;
  EXPECT_TRUE(r.operator_names().empty());
}

TEST(Registry, ADuplicateOperatorNameIsRefusedNamingBothFiles) {
  auto r = test::registry({test::test_plugins("testops"), test::test_plugins("dup")});
  EXPECT_EQ(r.find("test.step"), nullptr);
  const auto why = r.explain("test.step");
  EXPECT_NE(why.find("provided by more than one plugin"), std::string::npos) << why;
  EXPECT_NE(why.find("flowd-testops.so"), std::string::npos) << why;
  EXPECT_NE(why.find("flowd-testdup.so"), std::string::npos) << why;
  EXPECT_THROW(r.open("test.step"), Error);
  EXPECT_NE(r.find("test.count"), nullptr);  // the rest of testops is fine
}

TEST(Registry, AnExplicitPathThatDoesNotExistIsAnError) {
  plugin::Registry r({{"/no/such/dir", "--plugin-path", true}}, test::quiet_log());
  try {
    r.scan();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'/no/such/dir' (from --plugin-path) does not exist"), std::string::npos);
  }
}

TEST(Registry, TrustsTheCacheWhileTheFileIsUnchanged) {
  const auto dir = test::scratch();
  fs::create_directories(dir / "plugins");
  fs::copy_file(testops_so(), dir / "plugins" / "flowd-testops.so");
  const auto cache = dir / "cache.json";
  {
    auto r = test::registry({(dir / "plugins").string()}, cache);
    ASSERT_NE(r.find("test.step"), nullptr);
  }
  ASSERT_TRUE(fs::exists(cache));
  // Edit the cached manifest: a registry that trusts the cache sees the edit.
  std::string text = read_file(cache);
  for (std::size_t at; (at = text.find("\"test.step\"")) != std::string::npos;) text.replace(at, 11, "\"test.cached\"");
  write_file_atomic(cache, text);
  {
    auto r = test::registry({(dir / "plugins").string()}, cache);
    EXPECT_NE(r.find("test.cached"), nullptr);
  }
  // Replace the plugin file: its stamp changes and it is read again.
  fs::remove(dir / "plugins" / "flowd-testops.so");
  fs::copy_file(testops_so(), dir / "plugins" / "flowd-testops.so");
  {
    auto r = test::registry({(dir / "plugins").string()}, cache);
    EXPECT_EQ(r.find("test.cached"), nullptr);
    EXPECT_NE(r.find("test.step"), nullptr);
  }
}
