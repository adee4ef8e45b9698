// The proteome generator (tools/cvtree): deterministic in its parameters,
// proteomes of the asked size named P01.., a true tree over exactly those
// names, and parameters out of range refused naming them.
#include <set>
#include <stdexcept>

#include <gtest/gtest.h>

#include "cvtree/generate.hpp"
#include "proteome.hpp"
#include "tree.hpp"

using namespace flowd::cvtree;

TEST(CvtreeSynth, ProteomesAlongATreeOverTheirNames) {
  synth::Params p;
  p.proteomes = 5;
  p.proteins = 200;
  p.seed = 11;
  const synth::DataSet a = synth::generate(p), b = synth::generate(p);
  ASSERT_EQ(a.proteomes.size(), 5u);
  std::set<std::string> names;
  for (std::size_t i = 0; i < a.proteomes.size(); ++i) {
    EXPECT_EQ(a.proteomes[i].fasta, b.proteomes[i].fasta) << "deterministic";
    names.insert(a.proteomes[i].name);
    const Proteome pr = parse_fasta(a.proteomes[i].fasta, a.proteomes[i].name);
    EXPECT_GT(pr.proteins(), 100u);
    EXPECT_LT(pr.proteins(), 400u);
    EXPECT_GT(pr.residues.size(), 100u * 200u);
  }
  EXPECT_EQ(names, (std::set<std::string>{"P01", "P02", "P03", "P04", "P05"}));
  EXPECT_EQ(a.newick, b.newick);
  const ParsedTree t = parse_newick(a.newick);
  std::set<std::string> leaves;
  for (const auto& n : t.nodes)
    if (n.children.empty()) leaves.insert(n.name);
  EXPECT_EQ(leaves, names);
  p.seed = 12;
  EXPECT_NE(synth::generate(p).proteomes[0].fasta, a.proteomes[0].fasta) << "another seed, another data set";
}

TEST(CvtreeSynth, ParametersOutOfRangeAreNamed) {
  synth::Params p;
  p.divergence = 3;
  try {
    synth::validate(p);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("divergence"), std::string::npos) << e.what();
  }
  p = {};
  p.proteomes = 1;
  EXPECT_THROW(synth::validate(p), std::invalid_argument);
}
