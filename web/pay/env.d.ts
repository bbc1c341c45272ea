// Style sheets imported for the bundler only.
declare module "*.css";
