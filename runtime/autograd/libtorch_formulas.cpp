#include "runtime/autograd/libtorch_formulas.h"

namespace shardfuzz::autograd {
namespace {
thread_local bool t_libtorch_formulas = false;
}  // namespace

LibTorchFormulas::LibTorchFormulas() : previous_(t_libtorch_formulas) { t_libtorch_formulas = true; }
LibTorchFormulas::~LibTorchFormulas() { t_libtorch_formulas = previous_; }

bool libtorch_formulas() { return t_libtorch_formulas; }

}  // namespace shardfuzz::autograd
