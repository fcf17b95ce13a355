# Compiler flags shared by every target. C++ is -std=c++2b (std::expected on g++ 12).
if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  set(CMAKE_BUILD_TYPE RelWithDebInfo CACHE STRING "" FORCE)
endif()
set(CMAKE_POSITION_INDEPENDENT_CODE ON)
set(CMAKE_EXPORT_COMPILE_COMMANDS ON)
set(CMAKE_C_STANDARD 11)
add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-std=c++2b>)
add_compile_options(-Wall -Wextra -Wshadow -Wno-missing-field-initializers)
add_compile_definitions(_GNU_SOURCE)

if(GPUFRAC_SANITIZE)
  add_compile_options(-fsanitize=${GPUFRAC_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${GPUFRAC_SANITIZE})
endif()

find_package(PkgConfig REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(Threads REQUIRED)
pkg_check_modules(SECCOMP REQUIRED libseccomp)
pkg_check_modules(LIBCAP REQUIRED libcap)

# yaml-cpp, libseccomp and libcap are linked by name (-l...), not by absolute path: the one fully
# static program (gpufrac-hook, linked with -static) then takes their .a archives and every other
# program the shared libraries.
add_library(gpufrac_dep_yaml INTERFACE)
target_link_libraries(gpufrac_dep_yaml INTERFACE -lyaml-cpp)
add_library(gpufrac_dep_seccomp INTERFACE)
target_link_libraries(gpufrac_dep_seccomp INTERFACE -lseccomp)
add_library(gpufrac_dep_cap INTERFACE)
target_link_libraries(gpufrac_dep_cap INTERFACE -lcap)
