// Test helpers: scheduled changes that only take a link down or bring it back up.
#pragma once

#include "emulator/link/link_model.h"

namespace geotb::emu {

inline LinkChange down_at(Nanos at) {
  LinkChange c;
  c.at = at;
  c.up = false;
  return c;
}

inline LinkChange up_at(Nanos at) {
  LinkChange c;
  c.at = at;
  c.up = true;
  return c;
}

}  // namespace geotb::emu
