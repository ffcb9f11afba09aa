//! Tessera's back end roles: the job controller (`imagerequest` and `sliceresponse`) that plans, slices
//! and stitches, and the image processors (`slicerequest`) that render slices.
