/* An ELF stand-in for a driver library a simulated driver tree needs only by name and SONAME (the
 * SONAME is given at link time, tests/fakes/driver/CMakeLists.txt). */
int gpufrac_simulated_driver_stand_in(void) {
  return 0;
}
