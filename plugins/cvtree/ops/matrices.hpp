#pragma once
// The distance matrices in a cvtree.compare score table (one per k), for
// the tree and the writer.
#include <string>
#include <vector>

#include <flowd/flowd.hpp>

namespace flowd::cvtree {

struct DistanceMatrices {
  std::vector<std::string> names;  // the proteomes: the files' stems
  std::vector<int> ks;
  std::vector<std::vector<double>> distance;  // per k: n × n, row-major, symmetric, zero diagonal
};

// Throws flowd::Error naming `who` (the stage) for a table that is not the
// score table of a cvtree.compare over one set, or misses a pair.
DistanceMatrices distance_matrices(const Item& scores, const std::string& who);

// A proteome's name: its item key less a FASTA extension (.faa, .fa,
// .fasta) left by a gzipped file's stem.
std::string proteome_name(const std::string& key);

}  // namespace flowd::cvtree
