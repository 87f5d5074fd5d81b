# cmake -P script: install tunebench, configure and build the consumer, run it.
file(REMOVE_RECURSE ${WORK_DIR})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${ARGN} failed (${rc}):\n${out}\n${err}")
  endif()
  set(out "${out}" PARENT_SCOPE)
endfunction()
run(${CMAKE_COMMAND} --install ${BINARY_DIR} --prefix ${WORK_DIR}/prefix)
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/consumer -B ${WORK_DIR}/build
    -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DSHAPES=${SHAPES} -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run(${WORK_DIR}/build/my_bench --benchmark_list_tests)
if(NOT out MATCHES "cpu_my_sum/dsv4f_decode_tiny/M:4/N:512/K:128/manual_time")
  message(FATAL_ERROR "consumer did not register its op:\n${out}")
endif()
run(${CMAKE_COMMAND} -E env TUNEBENCH_CACHE=${WORK_DIR}/cache.sqlite TUNEBENCH_RUNS=${WORK_DIR}/runs
    ${WORK_DIR}/build/my_bench --benchmark_min_time=0.01)
