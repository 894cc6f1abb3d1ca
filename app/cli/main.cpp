#include "app/cli/cli.h"

int main(int argc, char** argv) { return tpusim::cli::run(argc, argv); }
