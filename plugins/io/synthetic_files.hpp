#pragma once
// Generated data sets that live as files, for sources that list files
// rather than decode them (io.list_files). Each is made once, in a cache
// folder ($FLOWD_CACHE_DIR, else $XDG_CACHE_HOME/flowd, else ~/.cache/flowd)
// named by the set's parameters, and the URI names one of its folders:
//   synthetic:prnu?cameras=4&flatfields=10&images=10&width=1024&height=768&
//     seed=1&part=images - tools/prnu's simulated camera photos; part is
//     flatfields or images;
//   synthetic:cvtree?proteomes=8&proteins=3000&length=330&divergence=0.25&
//     seed=1&part=proteomes - tools/cvtree's proteomes evolved along a random
//     tree; part is proteomes (<name>.faa) or truth (tree.nwk).
#include <filesystem>
#include <functional>
#include <string>

namespace flowd::io {

bool is_synthetic_files(const std::string& uri);
// The folder of the part the URI names, generated first if it is not in the
// cache yet (into a temporary sibling renamed into place, so an interrupted
// generation leaves nothing). Throws flowd::Error naming the URI and the
// key for an unknown generator, key or value. `say` gets a line before and
// after a generation (none when the set is in the cache already).
using Say = std::function<void(const std::string&)>;
std::filesystem::path synthetic_files(const std::string& uri, const Say& say = {});

}  // namespace flowd::io
