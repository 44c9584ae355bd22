// Talking to a child over its pipes: write all, read exactly, read a line by a deadline, drain
// what is there without blocking (keeping a tail), wait for input while watching the child.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>

namespace shardfuzz::harness::subprocess {

using Clock = std::chrono::steady_clock;

// Blocking write of all `size` bytes (false: the reader is gone).
bool write_all(int fd, const void* data, std::size_t size);
bool write_all(int fd, const std::string& text);
// Blocking read of exactly `size` bytes, also from a non-blocking fd (false: end of file first).
bool read_exact(int fd, void* data, std::size_t size);
// Reads what is there without blocking into `into`, keeping its last `keep_tail` bytes when
// nonzero (so a chatty child costs bounded memory); false at end of file.
bool drain(int fd, std::string& into, std::size_t keep_tail);
void set_nonblocking(int fd);

enum class Wait { Ready, Closed, TimedOut, Stopped };
// Polls `fd` until it has input (Ready), is closed (Closed) or `deadline` passes (TimedOut),
// draining `err_fd` (-1: none) into `err_tail` (last `keep_tail` bytes) meanwhile and asking
// `keep_waiting` (when given) at least every 20 ms; its false ends the wait (Stopped).
Wait wait_readable(int fd, Clock::time_point deadline, int err_fd, std::string& err_tail, std::size_t keep_tail,
                   const std::function<bool()>& keep_waiting = {});

// One line from `fd` (without its newline) by `deadline`; bytes read past it stay in `pending`
// for the next call. Throws std::runtime_error naming `who` when poll fails.
enum class LineRead { Line, Closed, TimedOut };
LineRead read_line(int fd, std::string& pending, Clock::time_point deadline, std::string& line, const std::string& who);

}  // namespace shardfuzz::harness::subprocess
