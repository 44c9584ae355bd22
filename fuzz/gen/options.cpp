// Option draws of a fully_shard placement.
#include "fuzz/gen/options.h"

#include "fuzz/gen/choice.h"

#include <rapidcheck/gen/Build.h>
#include <rapidcheck/gen/Transform.h>

namespace shardfuzz::fuzz::gen {

using fsdp::ReshardAfterForward;

rc::Gen<ReshardAfterForward> reshard_after_forward() {
  enum class Form { Auto, True, False, Int };
  return rc::gen::apply(
      [](Form form, int n) {
        switch (form) {
          case Form::Auto: return ReshardAfterForward::automatic();
          case Form::True: return ReshardAfterForward::yes();
          case Form::False: return ReshardAfterForward::no();
          case Form::Int: return ReshardAfterForward::ranks(n);
        }
        return ReshardAfterForward::automatic();
      },
      weighted_choice<Form>({{4, Form::Auto}, {2, Form::True}, {2, Form::False}, {1, Form::Int}}),
      weighted_choice<int>({{3, 2}, {2, 4}, {1, 3}, {1, 8}}));
}

rc::Gen<harness::ShardSpec> dense_options() {
  return rc::gen::build<harness::ShardSpec>(rc::gen::set(&harness::ShardSpec::reshard_after_forward, reshard_after_forward()));
}

rc::Gen<harness::ShardSpec> experts_options() {
  return rc::gen::build<harness::ShardSpec>(
      rc::gen::set(&harness::ShardSpec::reshard_after_forward, reshard_after_forward()),
      rc::gen::set(&harness::ShardSpec::mesh, weighted_choice<std::string>({{3, "dp"}, {1, "experts"}})),
      rc::gen::set(&harness::ShardSpec::shard_dim, weighted_choice<int>({{4, 0}, {1, 1}})));
}

}  // namespace shardfuzz::fuzz::gen
