// The projection as one self-contained HTML file (`shardfuzz import --project --html FILE`): the
// model and recipe, the baseline and its assumptions, and per rank 0's layers in backward a
// stacked plot — baseline, activations, live FSDP buffers, stale all-gathers in red — against the
// device's memory, the layer that runs out marked; the numbers as a table beside it. Chart.js is
// inlined as in harness/report/html_report.h; without it the table alone.
#pragma once

#include "harness/import/projection.h"

#include <string>

namespace shardfuzz::harness::import {

std::string projection_html(const Projection& p, const std::string& model, const std::string& recipe, const std::string& profile);

}  // namespace shardfuzz::harness::import
