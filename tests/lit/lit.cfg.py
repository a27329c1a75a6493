# lit configuration for agc's text-IR tests (tests/lit/).
#
# Each .ir file holds its own RUN lines, e.g.
#   // RUN: %agc-opt %s | %agc-opt - | FileCheck %s
# and is run from the build tree (lit.site.cfg.py, made by CMake, says
# where the tools are and then loads this file).
import os
import shutil

import lit.formats

config.name = "agc"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".ir"]

if not hasattr(config, "agc_opt"):
    lit_config.fatal("run lit on the build directory (tests/lit in the build tree), "
                     "whose lit.site.cfg.py CMake generates")


def llvm_tool(name):
    """A tool of LLVM 19: from its bin directory, else from PATH."""
    path = os.path.join(config.llvm_tools_dir, name)
    if os.access(path, os.X_OK):
        return path
    found = shutil.which(name)
    if not found:
        lit_config.fatal("cannot find the LLVM tool '%s'" % name)
    return found


def command(name):
    """A regex for `name` used as a command word, not inside a path."""
    return r"(?<![\w/.-])%s(?![\w/.-])" % name


config.substitutions.append(("%agc-opt", config.agc_opt))
# The other tools (before the frontend's %agc, which would take their
# names for %agc + a suffix); %agc-driver is agc itself, for the tests
# that compare a tool with it.
config.substitutions.append(("%agc-model", config.agc_model))
config.substitutions.append(("%agc-convert", config.agc_convert))
config.substitutions.append(("%agc-driver", config.agc))
# A memory limit for a command that must not run away ("ulimit -v ...;").
# Under AddressSanitizer none: its shadow memory needs terabytes of
# address space; the tests' time limits bound those runs instead.
sanitized = getattr(config, "ag_sanitize", "OFF").upper() in ("ON", "1", "TRUE", "YES")
config.substitutions.append(("%memory-limit", "" if sanitized else "ulimit -v 4000000;"))
config.substitutions.append((command("FileCheck"), config.filecheck))
config.substitutions.append((command("not"), llvm_tool("not")))
config.substitutions.append((command("count"), llvm_tool("count")))
config.substitutions.append((command("llvm-nm"), llvm_tool("llvm-nm")))
