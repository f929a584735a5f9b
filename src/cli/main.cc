#include <iostream>

#include "cli/app.h"
#include "cli/huge_pages.h"

int main(int argc, char** argv) {
  laggard::MaybeRunAgainWithHugePages(argv);  // returns unless it runs laggard again
  std::ios::sync_with_stdio(false);
  return laggard::RunLaggard(argc, argv, std::cout, std::cerr, laggard::TerminalOfProcess());
}
