# Writes OUT from the template IN with PROJECT_VERSION as given (-D: a script has no project())
# and TUNEBENCH_GIT_REVISION set to the short HEAD of the
# repository at SRC, "-dirty" appended when tracked files differ from it ("unknown" outside a
# git checkout). Run at configure time and, through the tunebench_version target, on every
# build, so that run records name the revision the binaries were built from. configure_file
# leaves OUT untouched when its text would not change, so an unchanged revision rebuilds nothing.
execute_process(COMMAND git rev-parse --short=12 HEAD
                WORKING_DIRECTORY ${SRC}
                OUTPUT_VARIABLE TUNEBENCH_GIT_REVISION OUTPUT_STRIP_TRAILING_WHITESPACE
                ERROR_QUIET RESULT_VARIABLE git_rc)
if(NOT git_rc EQUAL 0 OR TUNEBENCH_GIT_REVISION STREQUAL "")
  set(TUNEBENCH_GIT_REVISION unknown)
else()
  # A build of uncommitted changes must not pass for the commit in run records.
  execute_process(COMMAND git diff --quiet HEAD -- WORKING_DIRECTORY ${SRC}
                  ERROR_QUIET RESULT_VARIABLE dirty_rc)
  if(dirty_rc EQUAL 1)
    string(APPEND TUNEBENCH_GIT_REVISION "-dirty")
  endif()
endif()
configure_file(${IN} ${OUT} @ONLY)
