// Plugin discovery, refusal of bad plugins, the manifest cache, lazy opening.
#include <gtest/gtest.h>
#include <sys/stat.h>

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

TEST(Registry, ADuplicateOperatorNameInOneEntryIsRefusedNamingBothFiles) {
  const auto dir = test::scratch();
  fs::copy_file(testops_so(), dir / "flowd-testops.so");
  fs::copy_file(fs::path(test::test_plugins("dup")) / "flowd-testdup.so", dir / "flowd-testdup.so");
  auto r = test::registry({dir.string()});
  EXPECT_EQ(r.find("test.step"), nullptr);
  const auto why = r.explain("test.step");
  EXPECT_NE(why.find("provided by more than one plugin"), std::string::npos) << why;
  EXPECT_NE(why.find("flowd-testops.so"), std::string::npos) << why;
  EXPECT_NE(why.find("flowd-testdup.so"), std::string::npos) << why;
  EXPECT_THROW(r.open("test.step"), Error);
  EXPECT_NE(r.find("test.count"), nullptr);  // the rest of testops is fine
  EXPECT_TRUE(r.shadowed().empty());
}

// `-P DIR` is searched first: a plugin there replaces an installed one with
// the same operators instead of colliding with it.
TEST(Registry, EarlierSearchPathEntriesShadowLaterOnes) {
  auto r = test::registry({test::test_plugins("dup"), test::test_plugins("testops")});
  EXPECT_TRUE(r.problems().empty()) << problems(r);
  ASSERT_NE(r.find("test.step"), nullptr);
  EXPECT_EQ(r.provider("test.step")->name, "testdup");
  EXPECT_EQ(r.provider("test.count")->name, "testops");  // only the shared name is hidden
  ASSERT_EQ(r.shadowed().size(), 1u);
  const auto& s = r.shadowed().front();
  EXPECT_EQ(s.op, "test.step");
  EXPECT_EQ(r.plugins()[s.record].name, "testops");
  EXPECT_EQ(r.plugins()[s.by].name, "testdup");
  EXPECT_EQ(r.entry_of(s.record), 1u);
  EXPECT_EQ(r.entry_of(s.by), 0u);
  EXPECT_NO_THROW(r.open("test.step"));

  auto reversed = test::registry({test::test_plugins("testops"), test::test_plugins("dup")});
  ASSERT_NE(reversed.find("test.step"), nullptr);
  EXPECT_EQ(reversed.provider("test.step")->name, "testops");
}

// Each plugin reports its own SDK hash and ABI whatever was loaded before
// it. They were inline variables, which GCC emits as GNU unique symbols where
// they are not folded away (sanitizer and -O2 builds): the dynamic linker
// binds those to the first definition in the process, RTLD_LOCAL or not, so
// in such builds every plugin loaded after othersdk was refused and othersdk
// itself, loaded after another plugin, was accepted.
TEST(Registry, EachPluginReportsItsOwnSdkWhateverWasLoadedBefore) {
  for (const bool others_first : {false, true}) {
    SCOPED_TRACE(others_first ? "othersdk first" : "testops first");
    const auto paths = others_first
                           ? std::vector<std::string>{test::test_plugins("othersdk"), test::test_plugins("testops")}
                           : std::vector<std::string>{test::test_plugins("testops"), test::test_plugins("othersdk")};
    auto r = test::registry(paths);
    ASSERT_EQ(r.problems().size(), 1u) << problems(r);
    EXPECT_NE(problems(r).find("flowd-othersdk.so: refused"), std::string::npos) << problems(r);
    EXPECT_NE(r.find("test.step"), nullptr);
  }
}

TEST(Registry, RefusesAPluginBuiltAgainstOtherSdkHeaders) {
  auto r = test::registry({test::test_plugins("othersdk")});
  ASSERT_EQ(r.problems().size(), 1u) << problems(r);
  const std::string ours(flowd::sdk_hash.substr(0, 12));
  EXPECT_NE(problems(r).find("flowd-othersdk.so: refused: built against a different flowd SDK (plugin's SDK "
                             "headers "),
            std::string::npos)
      << problems(r);
  EXPECT_NE(problems(r).find(", this engine's " + ours + "); rebuild it against this flowd's SDK"), std::string::npos)
      << problems(r);
  EXPECT_EQ(r.find("othersdk.touch"), nullptr);
  EXPECT_THROW(r.open("othersdk.touch"), Error);
  // Asked for by plugin name, the registry says why it was refused.
  const auto why = r.explain("othersdk");
  EXPECT_NE(why.find("plugin 'othersdk' ("), std::string::npos) << why;
  EXPECT_NE(why.find("flowd-othersdk.so) was refused: built against a different flowd SDK"), std::string::npos) << why;
}

TEST(Registry, RefusesParameterDefaultsTheirOwnDeclarationRefuses) {
  auto r = test::registry({test::test_plugins("baddefault")});
  ASSERT_EQ(r.problems().size(), 1u) << problems(r);
  const auto p = problems(r);
  EXPECT_NE(p.find("flowd-baddefault.so: refused: plugin 'baddefault': operator 'baddefault.level' declares "
                   "parameter 'level' with default 999, which its own declaration refuses (expected int in [0, "
                   "255], got 999)"),
            std::string::npos)
      << p;
  EXPECT_NE(p.find("operator 'baddefault.mode' declares parameter 'mode' with default \"gray\", which its own "
                   "declaration refuses (expected string, one of color|grey, got \"gray\")"),
            std::string::npos)
      << p;
  EXPECT_EQ(r.find("baddefault.level"), nullptr);
  const auto why = r.explain("baddefault.level");
  EXPECT_NE(why.find("which was refused: plugin 'baddefault': operator 'baddefault.level' declares parameter "
                     "'level' with default 999"),
            std::string::npos)
      << why;
}

TEST(Registry, AMissingImplicitEntryIsWarnedAboutUnlessItIsTheDefaultDirectory) {
  plugin::Registry env({{"/no/such/dir", "FLOWD_PLUGIN_PATH", false}}, test::quiet_log());
  env.scan();
  ASSERT_EQ(env.problems().size(), 1u);
  EXPECT_EQ(env.problems().front(), "plugin path '/no/such/dir' (from FLOWD_PLUGIN_PATH) does not exist; skipped");
  plugin::Registry installed({{"/no/such/dir", "the default plugin directory", false, false}}, test::quiet_log());
  installed.scan();
  EXPECT_TRUE(installed.problems().empty()) << problems(installed);
}

// A FIFO must neither block the scan nor be reported as a corrupt library.
TEST(Registry, AFileThatIsNotARegularFileIsRefusedWithoutReadingIt) {
  const auto dir = test::scratch();
  const auto fifo = dir / "flowd-fifo.so";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  const auto rec = plugin::inspect_plugin(fifo);
  EXPECT_TRUE(rec.refused);
  EXPECT_EQ(rec.refusal, "cannot read " + fifo.string() + ": not a regular file");
  plugin::Registry r({{fifo, "--plugin-path", true}}, test::quiet_log());
  r.scan();
  ASSERT_EQ(r.problems().size(), 1u);
  EXPECT_EQ(r.problems().front(),
            "plugin path '" + fifo.string() + "' (from --plugin-path) is neither a directory nor a file; skipped");
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
