// The timeline's vocabulary: one name per event, upstream's spelling; every name a recorded trace
// carries parses back to its enum and prints the same; an unknown name in a timeline read from
// JSON is an error that names the field, the value and the known names (never a crash, never a
// silently absent event).
#include "runtime/memory/event.h"
#include "runtime/memory/timeline.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

namespace shardfuzz::memory {
namespace {

namespace fs = std::filesystem;

TEST(Event, EveryEnumeratorRoundTripsThroughItsName) {
  std::set<std::string> names;
  for (std::size_t i = 0; i < kEvents; ++i) {
    const auto event = static_cast<Event>(i);
    const std::string& name = name_of(event);
    EXPECT_NE(name, "?") << "event " << i << " has no name";
    EXPECT_TRUE(names.insert(name).second) << "two events are named " << name;
    EXPECT_EQ(event_from_name(name), event) << name;
    EXPECT_EQ(kEventTable[i].event, event) << "the table's row " << i << " is out of enum order";
    EXPECT_NE(known_event_names().find(name), std::string::npos) << name;
  }
  for (std::size_t i = 0; i < kCategories; ++i) {
    const auto category = static_cast<Category>(i);
    EXPECT_EQ(category_from_name(name_of(category)), category) << name_of(category);
  }
  EXPECT_EQ(name_of(static_cast<Event>(-1)), "?");
  EXPECT_EQ(name_of(Event::kCount), "?");
  EXPECT_FALSE(event_from_name(""));
  EXPECT_FALSE(event_from_name("?"));
  EXPECT_FALSE(event_from_name("Post_Backward")) << "names are exact";
}

TEST(Event, NamesAndCategoriesAreUpstreams) {
  EXPECT_EQ(name_of(Event::PreBackwardBegin), "pre_backward_begin");
  EXPECT_EQ(name_of(Event::AllGatherIssued), "all_gather_issued");
  EXPECT_EQ(name_of(Event::NonfiniteGrad), "nonfinite_grad");
  EXPECT_EQ(name_of(Event::EvalForwardEnd), "eval_forward_end");
  EXPECT_EQ(name_of(Event::CheckpointRecompute), "checkpoint_recompute");
  EXPECT_EQ(category_of(Event::PostBackward), Category::Fsdp);
  EXPECT_EQ(category_of(Event::NonfiniteGrad), Category::Fsdp);
  EXPECT_EQ(category_of(Event::ResetAfterFault), Category::Recovery);
  EXPECT_EQ(category_of(Event::Recovered), Category::Recovery);
  EXPECT_EQ(category_of(Event::ZeroGrad), Category::Train);
  EXPECT_EQ(category_of(Event::Teardown), Category::Train);
  EXPECT_EQ(category_of(Event::CheckpointForward), Category::Ac);
  EXPECT_EQ(name_of(Category::Recovery), "recovery");
}

// Every event name in every trace the tests replay (recorded on torch, and the exported
// reproducers' traces beside them) is one of ours and prints back byte for byte.
TEST(Event, EveryNameInTheRecordedTracesParses) {
  const fs::path recorded = SHARDFUZZ_CONFORMANCE_DIR;
  int files = 0, events = 0;
  for (const fs::path& dir : {recorded, recorded.parent_path() / "torch-2.11-generated"}) {
    ASSERT_TRUE(fs::is_directory(dir)) << dir;
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (entry.path().extension() != ".json") continue;
      std::ifstream in(entry.path());
      const nlohmann::json trace = nlohmann::json::parse(in);
      ++files;
      for (const auto& step : trace.at("steps"))
        for (const auto& e : step) {
          const std::string name = e.at("event").get<std::string>();
          const auto event = event_from_name(name);
          ASSERT_TRUE(event) << entry.path() << ": '" << name << "' is not a known event";
          EXPECT_EQ(name_of(*event), name);
          if (e.contains("category")) {
            EXPECT_EQ(name_of(category_of(*event)), e.at("category").get<std::string>());
          }
          ++events;
        }
    }
  }
  EXPECT_GE(files, 60);
  EXPECT_GE(events, 1000);
}

TimelineEvent sample() {
  TimelineEvent e;
  e.event = Event::Prefetch;
  e.group = "layers.1";
  e.detail = {{"target", "layers.0"}, {"pass", "backward"}};
  e.step = 2;
  e.pending_all_gather = {"layers.0"};
  return e;
}

TEST(Event, TheJsonFormSpellsTheNamesAndReadsThemBack) {
  for (std::size_t i = 0; i < kEvents; ++i) {
    TimelineEvent e = sample();
    e.event = static_cast<Event>(i);
    e.category = category_of(e.event);
    const nlohmann::json j = e.to_json();
    EXPECT_EQ(j.at("event"), name_of(e.event));
    EXPECT_EQ(j.at("category"), name_of(e.category));
    const TimelineEvent back = TimelineEvent::from_json(j);
    EXPECT_EQ(back.event, e.event);
    EXPECT_EQ(back.category, e.category);
    EXPECT_EQ(back.to_json(), j);
  }
}

std::string from_json_error(const nlohmann::json& j) {
  try {
    TimelineEvent::from_json(j);
  } catch (const nlohmann::json::exception& e) {
    return e.what();
  }
  ADD_FAILURE() << "accepted " << j.dump();
  return "";
}

TEST(Event, AnUnknownNameIsRejectedNamingTheFieldTheValueAndTheKnownNames) {
  nlohmann::json j = sample().to_json();
  j["event"] = "post_backwards";
  const std::string event_error = from_json_error(j);
  EXPECT_NE(event_error.find("'event'"), std::string::npos) << event_error;
  EXPECT_NE(event_error.find("'post_backwards'"), std::string::npos) << event_error;
  EXPECT_NE(event_error.find("post_backward, finalize_backward"), std::string::npos) << event_error;
  EXPECT_NE(event_error.find("checkpoint_recompute"), std::string::npos) << event_error;

  j = sample().to_json();
  j["category"] = "optimizer";
  const std::string category_error = from_json_error(j);
  EXPECT_NE(category_error.find("'category'"), std::string::npos) << category_error;
  EXPECT_NE(category_error.find("'optimizer'"), std::string::npos) << category_error;
  EXPECT_NE(category_error.find("fsdp, train, ac, recovery"), std::string::npos) << category_error;

  j = sample().to_json();
  j["event"] = 7;  // not a string at all
  EXPECT_FALSE(from_json_error(j).empty());
}

TEST(Event, TheDetailsAccessorsAreTypedAndNeverThrow) {
  TimelineEvent e = sample();
  EXPECT_EQ(e.prefetch_target(), "layers.0");
  EXPECT_EQ(e.prefetch_pass(), "backward");
  EXPECT_FALSE(e.skipped());
  EXPECT_FALSE(e.in_backward());
  EXPECT_FALSE(e.micro_batch());
  e.detail = {{"in_backward", true}, {"micro_batch", 3}, {"kept", true}, {"state", "FORWARD"},
              {"dropped_pending_all_gather", true}, {"skipped", "target already finished backward"},
              {"param", "layers.0.w"}, {"where", "after_reduce_scatter"}, {"mode", "full"},
              {"saves", 4}, {"matmul_like_ran", 2}, {"outputs_kept", 1}, {"bytes_kept", 64}, {"outputs_reused", 1}};
  EXPECT_TRUE(e.in_backward());
  EXPECT_EQ(e.micro_batch(), 3);
  EXPECT_TRUE(e.kept());
  EXPECT_EQ(e.state(), "FORWARD");
  EXPECT_TRUE(e.dropped_pending_all_gather());
  EXPECT_EQ(e.skipped(), "target already finished backward");
  EXPECT_EQ(e.nonfinite_param(), "layers.0.w");
  EXPECT_EQ(e.nonfinite_where(), "after_reduce_scatter");
  EXPECT_EQ(e.checkpoint_mode(), "full");
  const auto counts = e.checkpoint_counts();
  EXPECT_EQ(counts.saves, 4);
  EXPECT_EQ(counts.matmul_like_ran, 2);
  EXPECT_EQ(counts.outputs_kept, 1);
  EXPECT_EQ(counts.bytes_kept, 64);
  EXPECT_EQ(counts.outputs_reused, 1);
  // A detail of the wrong type, or none at all (null, as a recorder may write it): absent.
  e.detail = {{"in_backward", "yes"}, {"target", 3}, {"micro_batch", "0"}};
  EXPECT_FALSE(e.in_backward());
  EXPECT_FALSE(e.prefetch_target());
  EXPECT_FALSE(e.micro_batch());
  e.detail = nullptr;
  EXPECT_FALSE(e.kept());
  EXPECT_FALSE(e.state());
  EXPECT_EQ(e.checkpoint_counts().saves, 0);
}

}  // namespace
}  // namespace shardfuzz::memory
