// Fault plan draws.
#include "fuzz/gen/faults.h"

#include "fuzz/gen/choice.h"
#include "fuzz/gen/list.h"

#include <rapidcheck/gen/Build.h>
#include <rapidcheck/gen/Create.h>
#include <rapidcheck/gen/Numeric.h>
#include <rapidcheck/gen/Transform.h>

namespace shardfuzz::fuzz::gen {

rc::Gen<harness::FaultSpec> fault() {
  return rc::gen::map(
      rc::gen::tuple(weighted_choice<std::string>(
                         {{3, "collective_error"}, {3, "straggler"}, {2, "crash"}, {1, "hang"}, {2, "exception"}}),
                     rc::gen::inRange(0, 8), rc::gen::inRange(0, 61), rc::gen::inRange(1, 51),
                     weighted_choice<std::string>({{1, "forward"}, {1, "backward"}}), rc::gen::inRange(0, 3)),
      [](const std::tuple<std::string, int, int, int, std::string, int>& t) {
        harness::FaultSpec f;
        f.kind = std::get<0>(t);
        f.rank = std::get<1>(t);
        if (f.kind == "exception") {
          // A block by index (repair maps it onto the model), the pass, the step.
          f.module = "layers." + std::to_string(std::get<2>(t) % 4);
          f.pass = std::get<4>(t);
          f.step = std::get<5>(t);
        } else {
          f.collective = std::get<2>(t);
          f.delay_ms = f.kind == "straggler" ? std::get<3>(t) : 0;
        }
        return f;
      });
}

rc::Gen<std::vector<harness::FaultSpec>> fault_plan(bool enabled) {
  if (!enabled) return rc::gen::just(std::vector<harness::FaultSpec>{});
  return bounded_vector<harness::FaultSpec>(1, 2, fault());
}

}  // namespace shardfuzz::fuzz::gen
