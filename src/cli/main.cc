#include <iostream>

#include "cli/app.h"

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  return laggard::RunLaggard(argc, argv, std::cout, std::cerr, laggard::TerminalOfProcess());
}
