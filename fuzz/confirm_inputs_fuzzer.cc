// Fuzzes what `laggard confirm` and `diagnose RUN_DIR CONFIRM_DIR` read from
// a user's files (confirm/plan.h, confirm/fold.h): a diagnose report, a
// hosts file, a confirmation.json. The same bytes go to each.
//
// Invariants:
//   - nothing crashes, however deep or odd the JSON;
//   - a report that reads plans tests whose hosts all look like host names
//     (no option such as -oProxyCommand reaches a launcher);
//   - a hosts file that reads names only host names, the suspect among them.

#include <string>
#include <string_view>

#include "confirm/fold.h"
#include "confirm/plan.h"
#include "fuzz_support.h"

LAGGARD_FUZZ_TARGET(confirm_inputs) {
  using namespace laggard::confirm;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto in = ReadReport(text, "report.json"); in.ok()) {
    ConfirmPlan plan = PlanConfirm(*in, PlanOptions{});
    for (const PlannedTest& t : plan.tests) {
      for (const std::string& h : t.hosts) FUZZ_CHECK(LooksLikeHost(h), "planned host '{}'", h);
    }
  }
  if (auto hosts = SuspectInput("node-01", text, "hosts.txt", 8); hosts.ok()) {
    bool suspect = false;
    for (const std::string& h : hosts->hosts) {
      FUZZ_CHECK(LooksLikeHost(h), "host '{}'", h);
      suspect |= h == "node-01";
    }
    FUZZ_CHECK(suspect, "the suspect is not among {} hosts", hosts->hosts.size());
  }
  (void)ParseConfirmation(text, "confirmation.json");
  return 0;
}
