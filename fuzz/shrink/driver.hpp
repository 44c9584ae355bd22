// Template bodies of driver.h.
#pragma once

#include <rapidcheck/seq/Create.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <stdexcept>
#include <utility>
#include <vector>

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
    current_key_ = search_.key(out_.minimal);
    known_[current_key_] = Known::Accepted;
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

  // What a run said about a value, by key: a run is seconds, a comparison microseconds.
  enum class Known { Rejected, Reproduces, Accepted };
  // A candidate of the current walk: taken without a run (its key is the current value's, or it was
  // run ahead and reproduces) or to be run.
  struct Entry {
    Candidate<T> candidate;
    std::string key;
    enum class What { Unchanged, Reproduces, Run } what;
  };

  int width() const { return search_.fails_many ? std::max(1, search_.width) : 1; }

  // One walk over the current value's candidates: true when it took one. The walk goes in windows:
  // the candidates in order up to `width` to run or one to take without a run; the window's runs
  // go at once, and the first candidate of the window in order that reproduces is taken. With
  // width 1 this is the plain greedy walk: run one, take it if it reproduces, else go on.
  bool descend() {
    // in_trying_order has already left the inadmissible candidates out (and counted them).
    const bool admissible_only = search_.change || search_.cost;
    auto candidates = admissible_only ? in_trying_order(search_.candidates(*current_)) : search_.candidates(*current_);
    for (;;) {
      const int room = out_of_budget() ? 0 : std::min(width(), budget_.max_runs - out_.tried);
      std::vector<Entry> window;
      int runs = 0;
      bool walked = false;
      while (runs == 0 || runs < room) {  // no look-ahead past a full window
        auto c = candidates.next();
        if (!c) {
          walked = true;
          break;
        }
        if (!admissible_only && search_.admissible && !search_.admissible(c->value)) {
          ++out_.skipped;
          continue;
        }
        std::string key = search_.key(c->value);
        const auto known = known_.find(key);
        if (key == current_key_ || (known != known_.end() && known->second == Known::Reproduces)) {
          const auto what = key == current_key_ ? Entry::What::Unchanged : Entry::What::Reproduces;
          window.push_back({std::move(*c), std::move(key), what});
          break;
        }
        if (known != known_.end() || in_window(window, key)) {
          ++out_.skipped;
          continue;
        }
        if (room == 0) {
          out_.budget_exhausted = true;
          return false;
        }
        window.push_back({std::move(*c), std::move(key), Entry::What::Run});
        ++runs;
      }
      run_window(window, runs);
      for (Entry& e : window) {
        if (e.what == Entry::What::Unchanged) {
          current_ = std::move(e.candidate.value);
          ++out_.unchanged;
          return true;
        }
        if (known_.at(e.key) == Known::Reproduces) {
          known_[e.key] = Known::Accepted;
          current_key_ = e.key;
          accept(std::move(e.candidate));
          return true;
        }
      }
      if (walked) return false;
    }
  }

  // The candidates with a change not rejected before, then the others, each group in order.
  // The admissible candidates: with `change`, those whose change was never rejected first; with
  // `cost`, each of the two groups cheapest first (stable).
  rc::Seq<Candidate<T>> in_trying_order(rc::Seq<Candidate<T>> all) {
    std::vector<std::pair<double, Candidate<T>>> fresh, again;
    while (auto c = all.next()) {
      if (search_.admissible && !search_.admissible(c->value)) {
        ++out_.skipped;
        continue;
      }
      const bool rejected = search_.change && rejected_changes_.count(search_.change(*current_, c->value));
      const double cost = search_.cost ? search_.cost(c->value) : 0.0;
      (rejected ? again : fresh).emplace_back(cost, std::move(*c));
    }
    const auto cheaper = [](const auto& a, const auto& b) { return a.first < b.first; };
    std::stable_sort(fresh.begin(), fresh.end(), cheaper);
    std::stable_sort(again.begin(), again.end(), cheaper);
    std::vector<Candidate<T>> order;
    for (auto* group : {&fresh, &again})
      for (auto& [cost, c] : *group) order.push_back(std::move(c));
    return rc::seq::fromContainer(std::move(order));
  }

  static bool in_window(const std::vector<Entry>& window, const std::string& key) {
    for (const Entry& e : window)
      if (e.key == key) return true;
    return false;
  }

  // Runs the window's candidates to run (one by one through `fails`, or at once through
  // `fails_many`) and records what each said.
  void run_window(const std::vector<Entry>& window, int runs) {
    if (runs == 0) return;
    std::vector<const T*> values;
    for (const Entry& e : window)
      if (e.what == Entry::What::Run) values.push_back(&e.candidate.value);
    std::vector<std::optional<std::string>> got;
    if (values.size() > 1) {
      got = search_.fails_many(values);
      if (got.size() != values.size()) throw std::logic_error("shrink: fails_many answered for a different number of values");
    } else {
      got.push_back(fails_(*values.front()));
    }
    out_.tried += static_cast<int>(values.size());
    std::size_t i = 0;
    for (const Entry& e : window)
      if (e.what == Entry::What::Run) {
        const bool reproduces = got[i] && *got[i] == out_.failure;
        known_[e.key] = reproduces ? Known::Reproduces : Known::Rejected;
        if (!reproduces && search_.change) rejected_changes_.insert(search_.change(*current_, e.candidate.value));
        ++i;
      }
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
  std::map<std::string, Known> known_;
  std::set<std::string> rejected_changes_;  // changes run and rejected (Search::change)
};

}  // namespace detail

template <typename T>
Outcome<T> greedy(T start, const Search<T>& search, const Fails<T>& fails, Budget budget,
                  std::optional<std::string> failure) {
  return detail::Greedy<T>(std::move(start), search, fails, budget).run(std::move(failure));
}

}  // namespace shardfuzz::fuzz::shrinking
