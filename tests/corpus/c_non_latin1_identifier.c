/* n3_θ and n4_中 are bound nodes; i1θ is a global from the prelude:
   each is one identifier (GCC accepts UTF-8 letters beyond U+00FF). */
extern float i1θ;
void theta_fwd(float *n3_θ, const float *n4_中) {
  for (int i1 = 0; i1 < 4; ++i1) n3_θ[i1] = i1θ + n4_中[i1];
}
