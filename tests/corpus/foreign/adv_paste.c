/* A token-pasting macro builds names: the pasted argument stays. */
#define LANE(k) lane_##k
void lanes(float *out) {
  float lane_0 = 1.0f, lane_1 = 2.0f;
  float mix = LANE(0) + LANE(1);
  out[0] = mix;
}
