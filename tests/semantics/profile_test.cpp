// Profiles composed as values: with/without give the profile that named() reads from their name,
// field for field, for every base and every switch.
#include "runtime/semantics/profile.h"

#include <gtest/gtest.h>

namespace shardfuzz::semantics {
namespace {

TEST(ProfileTest, WithTurnsOneSwitchOnAndNamesItAsNamedReadsIt) {
  for (const std::string& base_name : Profile::names()) {
    const Profile base = Profile::named(base_name);
    for (const Profile::Switch& s : Profile::switches()) {
      const Profile on = base.with(s);
      EXPECT_EQ(on.name, base_name + "+" + s.name);
      EXPECT_EQ(on.base, base_name);
      EXPECT_TRUE(on.*(s.flag)) << on.name;
      EXPECT_EQ(Profile::named(on.name), on) << on.name;
      for (const Profile::Switch& other : Profile::switches())
        if (other.flag != s.flag) EXPECT_EQ(on.*(other.flag), base.*(other.flag)) << on.name << ": " << other.name;
    }
  }
}

TEST(ProfileTest, WithoutSetsOneSwitchAsStrictHasItAndNamesItAsNamedReadsIt) {
  const Profile strict = Profile::named("strict");
  for (const std::string& base_name : Profile::names()) {
    const Profile base = Profile::named(base_name);
    for (const Profile::Switch& s : Profile::switches()) {
      const Profile off = base.without(s);
      EXPECT_EQ(off.name, base_name + "~" + s.name);
      EXPECT_EQ(off.base, base_name);
      EXPECT_EQ(off.*(s.flag), strict.*(s.flag)) << off.name;
      EXPECT_EQ(Profile::named(off.name), off) << off.name;
      for (const Profile::Switch& other : Profile::switches())
        if (other.flag != s.flag) EXPECT_EQ(off.*(other.flag), base.*(other.flag)) << off.name << ": " << other.name;
    }
  }
}

TEST(ProfileTest, CompositionsChainAsTheirNamesDo) {
  const auto& all = Profile::switches();
  for (const std::string& base_name : Profile::names())
    for (std::size_t i = 0; i < all.size(); ++i) {
      const Profile::Switch& a = all[i];
      const Profile::Switch& b = all[(i + 1) % all.size()];
      const Profile p = Profile::named(base_name).with(a).without(b).with(b);
      EXPECT_EQ(p.name, base_name + "+" + a.name + "~" + b.name + "+" + b.name);
      EXPECT_EQ(Profile::named(p.name), p) << p.name;
      const Profile q = Profile::named(base_name).with(a).without(a);
      EXPECT_EQ(Profile::named(q.name), q) << q.name;
    }
}

TEST(ProfileTest, BlamesFlipTakesEachDeviationBackToStrict) {
  // What harness/zoo's blame runs: the profile with one deviation set as strict has it.
  const Profile strict = Profile::named("strict");
  for (const std::string& base_name : Profile::names()) {
    const Profile p = Profile::named(base_name);
    for (const Profile::Switch* s : p.deviations_from_strict()) {
      const Profile flipped = p.without(*s);
      EXPECT_EQ(flipped.*(s->flag), strict.*(s->flag)) << flipped.name;
      for (const Profile::Switch* left : flipped.deviations_from_strict()) EXPECT_TRUE(left->flag != s->flag) << flipped.name;
    }
  }
}

TEST(ProfileTest, EqualityComparesTheNameAndEverySwitch) {
  const Profile p = Profile::named("torch-2.9");
  EXPECT_EQ(p, Profile::named("torch-2.9"));
  Profile renamed = p;
  renamed.name = "torch-2.9+x";
  EXPECT_NE(p, renamed);
  for (const Profile::Switch& s : Profile::switches()) {
    Profile flipped = p;
    flipped.*(s.flag) = !(p.*(s.flag));
    EXPECT_NE(p, flipped) << s.name;
  }
}

}  // namespace
}  // namespace shardfuzz::semantics
