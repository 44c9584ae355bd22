// Exit codes of the shardfuzz command line, shared by every subcommand so that CI scripts can
// tell "the tool found a problem" from "the tool could not run".
#pragma once

namespace shardfuzz::app {

constexpr int kExitOk = 0;        // everything checked passed
constexpr int kExitFindings = 1;  // at least one check failed (a finding)
constexpr int kExitUsage = 2;     // bad command line, missing or unreadable input

// The --help footer: the contract above, in words.
constexpr const char* kExitCodesHelp =
    "Exit codes:\n"
    "  0  everything checked passed\n"
    "  1  at least one check failed\n"
    "  2  usage error, or an input that is missing or unreadable";

}  // namespace shardfuzz::app
