"""FaceFusion's processors (face swapper, face enhancer, masks, face classifier) as thin adapters working in crop
space: the engine warps each face once per model template, the adapters run batched over faces, and the chain
pastes each face back once with the combined mask."""
