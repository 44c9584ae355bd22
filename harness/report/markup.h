// Text for HTML and XML (the reports): the five markup escapes, and the control characters XML 1.0
// forbids dropped.
#pragma once

#include <string>

namespace shardfuzz::harness {

std::string markup_escaped(const std::string& text);

// JSON (or a script) inside an HTML <script> element: "</" would end the element.
std::string script_safe(std::string text);

}  // namespace shardfuzz::harness
