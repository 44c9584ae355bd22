// Template bodies of driver.h.
#pragma once

#include <chrono>
#include <set>
#include <utility>

namespace shardfuzz::fuzz::shrinking {

namespace detail {

template <typename T>
class Greedy {
 public:
  Greedy(T start, const Search<T>& search, const Fails<T>& fails, Budget budget)
      : search_(search), fails_(fails), budget_(budget), t0_(Clock::now()) {
    out_.minimal = std::move(start);
  }

  Outcome<T> run(std::optional<std::string> failure) {
    // Values already run, by key: a run is seconds, a comparison microseconds.
    current_key_ = search_.key(out_.minimal);
    ran_.insert(current_key_);
    if (!failure) {
      if (out_of_budget()) {
        out_.budget_exhausted = true;
        out_.reproduced = false;
        return finish();
      }
      ++out_.tried;
      failure = fails_(out_.minimal);
      if (!failure) {
        out_.reproduced = false;
        return finish();
      }
    }
    out_.failure = *failure;
    current_ = out_.minimal;
    while (descend()) {
    }
    return finish();
  }

 private:
  using Clock = std::chrono::steady_clock;

  // One walk over the current value's candidates: true when it took one.
  bool descend() {
    auto candidates = search_.candidates(*current_);
    while (auto c = candidates.next()) {
      if (search_.admissible && !search_.admissible(c->value)) {
        ++out_.skipped;
        continue;
      }
      std::string key = search_.key(c->value);
      if (key == current_key_) {
        current_ = std::move(c->value);
        ++out_.unchanged;
        return true;
      }
      auto [at, fresh] = ran_.insert(std::move(key));
      if (!fresh) {
        ++out_.skipped;
        continue;
      }
      if (out_of_budget()) {
        out_.budget_exhausted = true;
        return false;
      }
      ++out_.tried;
      const std::optional<std::string> got = fails_(c->value);
      if (got && *got == out_.failure) {
        current_key_ = *at;
        accept(std::move(*c));
        return true;
      }
    }
    return false;
  }

  void accept(Candidate<T> c) {
    current_ = c.value;
    out_.minimal = std::move(c.value);
    ++out_.accepted;
    if (search_.progress)
      search_.progress(Step<T>{out_.minimal, c.edit, out_.accepted, out_.tried, seconds()});
  }

  double seconds() const { return std::chrono::duration<double>(Clock::now() - t0_).count(); }
  bool out_of_budget() const { return out_.tried >= budget_.max_runs || seconds() >= budget_.max_seconds; }
  Outcome<T> finish() {
    out_.elapsed_seconds = seconds();
    return std::move(out_);
  }

  const Search<T>& search_;
  const Fails<T>& fails_;
  const Budget budget_;
  const Clock::time_point t0_;
  Outcome<T> out_;
  std::optional<T> current_;  // optional: T need not be default-constructible
  std::string current_key_;
  std::set<std::string> ran_;
};

}  // namespace detail

template <typename T>
Outcome<T> greedy(T start, const Search<T>& search, const Fails<T>& fails, Budget budget,
                  std::optional<std::string> failure) {
  return detail::Greedy<T>(std::move(start), search, fails, budget).run(std::move(failure));
}

}  // namespace shardfuzz::fuzz::shrinking
